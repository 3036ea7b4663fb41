// Transpose set-up: options, extents, the exchange tables and buffers (no hot loop).
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/transpose/transpose.hpp"

namespace hympi::transpose {

namespace {

/// Throws InvalidArgument naming `what` when `elements` (a count or an offset of an exchange) exceeds MPI's int.
void require_int_count(double elements, const char* what) {
  if (elements > double(INT_MAX)) {
    char count[32];
    std::snprintf(count, sizeof count, "%.0f", elements);
    throw InvalidArgument(std::string(what) + " of " + count + " elements is too large for MPI's int counts (use more ranks)");
  }
}

}  // namespace

TileShape parse_tile_shape(std::string_view text) {
  if (text == "auto") return {};
  const auto bad = [&] {
    return InvalidArgument("bad tile '" + std::string(text) +
                           "' (expected RxC or RxC:streaming with R, C >= 1, or auto)");
  };
  TileShape tile;
  constexpr std::string_view kStreaming = ":streaming";
  std::string_view shape = text;
  if (shape.ends_with(kStreaming)) {
    tile.streaming = true;
    shape.remove_suffix(kStreaming.size());
  }
  const auto x = shape.find('x');
  if (x == std::string_view::npos) throw bad();
  const auto parse = [&](std::string_view part, int& out) {
    const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), out);
    if (ec != std::errc() || end != part.data() + part.size() || out < 1) throw bad();
  };
  parse(shape.substr(0, x), tile.rows);
  parse(shape.substr(x + 1), tile.cols);
  return tile;
}

std::string to_string(const TileShape& tile) {
  if (tile.automatic()) return "auto";
  return std::to_string(tile.rows) + "x" + std::to_string(tile.cols) + (tile.streaming ? ":streaming" : "");
}

nlohmann::json TransposeOptions::to_json() const {
  return {{"exchange", to_string(exchange)},
          {"wire", to_string(wire)},
          {"tile", to_string(tile)},
          {"backward_tile", to_string(backward_tile)},
          {"tile_auto", tile_auto || tile.automatic() || backward_tile.automatic()},
          {"pack_threads", pack_threads}};
}

void TransposeOptions::validate() const {
  if (pack_threads < 0) throw InvalidArgument("pack threads must be >= 0, got " + std::to_string(pack_threads));
  for (const TileShape& t : {tile, backward_tile})
    if (!t.automatic() && (t.rows < 1 || t.cols < 1))
      throw InvalidArgument("bad tile " + std::to_string(t.rows) + "x" + std::to_string(t.cols) +
                            " (both sides >= 1, or 0x0 for automatic)");
}

nlohmann::json TransposeTimes::to_json() const {
  return {{"pack_s", pack_s},         {"exchange_s", exchange_s}, {"unpack_s", unpack_s},
          {"total_s", total_s()},     {"bytes_sent", bytes_sent}, {"count", count}};
}

Extent block_extent(long n, int parts, int index) {
  if (parts < 1 || index < 0 || index >= parts)
    throw InvalidArgument("part " + std::to_string(index) + " of a split into " + std::to_string(parts) +
                          " parts does not exist");
  const long base = n / parts, extra = n % parts;
  const long begin = index * base + std::min<long>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

Transpose::Transpose(std::array<long, 3> n, MPI_Comm comm, const TransposeOptions& options)
    : n_(n), lines_(n[1] * n[2]), options_(options) {
  options_.validate();
  HYMPI_MPI(MPI_Comm_size(comm, &ranks_));
  // Needs no communication, so every rank throws before the collective duplicate.
  check_extents(n, ranks_, options_.exchange);
  comm_ = Comm::duplicate(comm);
  // HYMPI_MPI needs error codes back, whatever handler the caller's communicator had.
  HYMPI_MPI(MPI_Comm_set_errhandler(comm_.get(), MPI_ERRORS_RETURN));
  rank_ = comm_.rank();
  if (options_.pack_threads == 0) options_.pack_threads = omp_get_max_threads();

  const auto p = static_cast<std::size_t>(ranks_);
  send_counts_.resize(p);
  send_displs_.resize(p);
  recv_counts_.resize(p);
  recv_displs_.resize(p);
  const long my_x = planes_x().size(), my_lines = pencil_lines().size();
  // Every block is at most (largest x share) x (largest line share): the first rank's in both.
  const long largest = block_extent(n_[0], ranks_, 0).size() * block_extent(lines_, ranks_, 0).size();
  // check_extents() vouched for every count and offset below fitting an int.
  padded_block_ = static_cast<int>(largest);
  const bool padded = options_.exchange == TransposeExchange::alltoall;
  long send_at = 0, recv_at = 0;
  for (int r = 0; r < ranks_; ++r) {
    const auto i = static_cast<std::size_t>(r);
    peer_lines_.push_back(pencil_lines(r));
    // The own block stays out of the exchange: the local transpose reads and writes it in the planes (the
    // own-block scratch with a single wire).
    const bool self = r == rank_;
    send_counts_[i] = self ? 0 : static_cast<int>(my_x * pencil_lines(r).size());
    recv_counts_[i] = self ? 0 : static_cast<int>(planes_x(r).size() * my_lines);
    send_displs_[i] = static_cast<int>(padded ? r * largest : send_at);
    recv_displs_[i] = static_cast<int>(padded ? r * largest : recv_at);
    send_at += send_counts_[i];
    recv_at += recv_counts_[i];
  }
  const std::size_t buffer_size = padded ? p * static_cast<std::size_t>(largest)
                                         : static_cast<std::size_t>(std::max(send_at, recv_at));
  // Row x of the tall nx x my_lines array (received forward, sent backward) starts in its source's block
  // (the own rows' entries are unused).
  row_offset_.resize(static_cast<std::size_t>(n_[0]));
  for (int r = 0; r < ranks_; ++r) {
    const Extent xs = planes_x(r);
    for (long x = xs.begin; x < xs.end; ++x)
      row_offset_[static_cast<std::size_t>(x)] = static_cast<std::size_t>(
          recv_displs_[static_cast<std::size_t>(r)] + (x - xs.begin) * my_lines);
  }
  if (options_.wire == WirePrecision::single_precision) {
    send_f_.resize(buffer_size);
    recv_f_.resize(buffer_size);
    own_f_.resize(static_cast<std::size_t>(my_x * my_lines));
  } else {
    send_d_.resize(buffer_size);
    recv_d_.resize(buffer_size);
  }
}

void Transpose::check_extents(std::array<long, 3> n, int ranks, TransposeExchange exchange) {
  static constexpr const char* kName[3] = {"nx", "ny", "nz"};
  for (int d = 0; d < 3; ++d)
    if (n[d] < 1) throw InvalidArgument(std::string("grid extent ") + kName[d] + " must be >= 1, got " +
                                        std::to_string(n[d]));
  if (ranks < 1) throw InvalidArgument("a transpose needs >= 1 ranks, got " + std::to_string(ranks));
  if (n[0] < ranks)
    throw InvalidArgument("cannot split nx = " + std::to_string(n[0]) + " x planes over " + std::to_string(ranks) +
                          " ranks (fewer planes than ranks)");
  // In doubles: ny * nz and the buffers below can overflow a long for a mistyped size.
  const double lines = double(n[1]) * double(n[2]);
  if (lines < ranks)
    throw InvalidArgument("cannot split ny*nz = " + std::to_string(long(lines)) + " (z, y) lines over " +
                          std::to_string(ranks) + " ranks (fewer lines than ranks)");
  // block_extent gives the first ranks one more: rank 0 holds the largest share of both splits, the last the least.
  const double x_min = double(n[0] / ranks), x0 = x_min + (n[0] % ranks > 0 ? 1 : 0);
  const double l_min = std::floor(lines / ranks), l0 = l_min + (std::fmod(lines, double(ranks)) > 0 ? 1 : 0);
  const double largest = x0 * l0;
  require_int_count(largest, "a transpose block");
  // The offsets of an exchange stay below its buffer's end: padded, one largest block per rank; otherwise the
  // other ranks' blocks of this rank's planes (sent) or lines (received), at most the bounds below.
  const double buffer = exchange == TransposeExchange::alltoall
                            ? double(ranks) * largest
                            : std::max(x0 * (lines - l_min), (double(n[0]) - x_min) * l0);
  require_int_count(buffer, "a transpose buffer");
}

std::size_t Transpose::plane_size() const noexcept {
  return static_cast<std::size_t>(planes_x().size() * lines_);
}

std::size_t Transpose::pencil_size() const noexcept {
  return static_cast<std::size_t>(pencil_lines().size() * n_[0]);
}

void Transpose::check_sizes(std::size_t planes, std::size_t pencils, const char* direction) const {
  if (planes != plane_size())
    throw InvalidArgument(std::string(direction) + ": planes span holds " + std::to_string(planes) +
                          " doubles, this rank's planes hold " + std::to_string(plane_size()));
  if (pencils != pencil_size())
    throw InvalidArgument(std::string(direction) + ": pencils span holds " + std::to_string(pencils) +
                          " doubles, this rank's pencils hold " + std::to_string(pencil_size()));
}

}  // namespace hympi::transpose
