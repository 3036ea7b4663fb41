// The transpose's three steps: realign (+ cast) each peer's block, exchange, blocked local transpose.
#include <mpi.h>

#include <algorithm>
#include <array>
#include <limits>

#include "hympi/core/error.hpp"
#include "hympi/transpose/transpose.hpp"

namespace hympi::transpose {

namespace {

template <class T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) {
    return MPI_FLOAT;
  } else {
    return MPI_DOUBLE;
  }
}

/// Planes -> per-peer blocks (forward pack) or back (backward unpack): each x row of the planes holds
/// every peer's lines side by side; each peer's block holds its lines of every local x row. This rank's
/// own block is skipped: the local transpose reads (writes) it in the planes directly.
template <bool ToBlocks, class Planes, class Blocks>
void realign(Planes* planes, Blocks* blocks, long nx_local, long lines, std::span<const Extent> peer_lines,
             std::span<const int> displs, int self, int threads) {
  const long peers = static_cast<long>(peer_lines.size());
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (long r = 0; r < peers; ++r) {
    for (long i = 0; i < nx_local; ++i) {
      if (r == self) continue;
      const Extent ls = peer_lines[static_cast<std::size_t>(r)];
      Planes* row = planes + i * lines + ls.begin;
      Blocks* block = blocks + displs[static_cast<std::size_t>(r)] + i * ls.size();
      if constexpr (ToBlocks) {
        for (long l = 0; l < ls.size(); ++l) block[l] = static_cast<Blocks>(row[l]);
      } else {
        for (long l = 0; l < ls.size(); ++l) row[l] = static_cast<double>(block[l]);
      }
    }
  }
}

/// Where the rows of the tall nx x nl array are: this rank's own x rows in its planes (`plane_row`),
/// the other ranks' rows in the exchange buffer (`buffer_row`).
template <class PlaneRow, class BufferRow>
struct TallRows {
  PlaneRow plane_row;
  BufferRow buffer_row;
  Extent self;  ///< this rank's x rows
};

/// The tall array <-> pencils nl x nx, tile by tile so that both the rows read and the rows written
/// of one tile stay in cache. Every value goes through the wire type, this rank's own block too, so
/// that the precision of the result does not depend on who owned a value.
template <bool ToPencils, class Wire, class Pencils, class PlaneRow, class BufferRow>
void local_transpose(const TallRows<PlaneRow, BufferRow>& tall, Pencils* pencils, long nx, long nl, TileShape tile,
                     int threads) {
  const long tr = tile.rows, tc = tile.cols;
  const long row_tiles = (nx + tr - 1) / tr, col_tiles = (nl + tc - 1) / tc;
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (long bl = 0; bl < col_tiles; ++bl) {
    for (long bx = 0; bx < row_tiles; ++bx) {
      const long l0 = bl * tc, l1 = std::min(l0 + tc, nl), x0 = bx * tr, x1 = std::min(x0 + tr, nx);
      const auto part = [&](const auto& row, long xa, long xb) {
        if constexpr (ToPencils) {
          // Contiguous stores along x; the loads walk down the tile's rows.
          for (long l = l0; l < l1; ++l) {
            double* out = pencils + l * nx;
            for (long x = xa; x < xb; ++x) out[x] = static_cast<double>(static_cast<Wire>(row(x)[l]));
          }
        } else {
          for (long x = xa; x < xb; ++x) {
            auto* out = row(x);
            using Out = std::remove_pointer_t<decltype(out)>;
            for (long l = l0; l < l1; ++l) out[l] = static_cast<Out>(static_cast<Wire>(pencils[l * nx + x]));
          }
        }
      };
      part(tall.buffer_row, x0, std::min(x1, tall.self.begin));
      part(tall.plane_row, std::max(x0, tall.self.begin), std::min(x1, tall.self.end));
      part(tall.buffer_row, std::max(x0, tall.self.end), x1);
    }
  }
}

/// Candidates of the automatic tile (rows along x x columns along lines): square ones of several
/// sizes and flat ones either way, since the tall array may be much taller than wide or the reverse.
constexpr std::array<TileShape, 9> kTileCandidates{{
    {16, 16}, {32, 32}, {64, 64}, {128, 128}, {8, 256}, {16, 128}, {32, 64}, {64, 32}, {128, 16}}};

}  // namespace

template <class T>
std::pair<T*, T*> Transpose::buffers() noexcept {
  if constexpr (std::is_same_v<T, float>) {
    return {send_f_.data(), recv_f_.data()};
  } else {
    return {send_d_.data(), recv_d_.data()};
  }
}

template <class T>
void Transpose::exchange(const T* send, T* recv, bool forward) {
  // The backward direction sends what the forward one received, from the same places.
  const auto& sc = forward ? send_counts_ : recv_counts_;
  const auto& sd = forward ? send_displs_ : recv_displs_;
  const auto& rc = forward ? recv_counts_ : send_counts_;
  const auto& rd = forward ? recv_displs_ : send_displs_;
  const MPI_Datatype type = mpi_type<T>();
  const MPI_Comm comm = comm_.get();
  std::uint64_t sent = 0;
  if (ranks_ == 1) return;  // the own block never leaves the planes
  switch (options_.exchange) {
    case TransposeExchange::alltoallv:
      HYMPI_MPI(MPI_Alltoallv(send, sc.data(), sd.data(), type, recv, rc.data(), rd.data(), type, comm));
      for (int r = 0; r < ranks_; ++r)
        if (r != rank_) sent += static_cast<std::uint64_t>(sc[static_cast<std::size_t>(r)]);
      break;
    case TransposeExchange::alltoall:
      HYMPI_MPI(MPI_Alltoall(send, padded_block_, type, recv, padded_block_, type, comm));
      sent = static_cast<std::uint64_t>(ranks_ - 1) * static_cast<std::uint64_t>(padded_block_);
      break;
    case TransposeExchange::pairwise: {
      // One partner per step: XOR pairs when the rank count is a power of two (every step a perfect
      // matching), a shifted ring otherwise.
      const bool power_of_two = (ranks_ & (ranks_ - 1)) == 0;
      for (int k = 1; k < ranks_; ++k) {
        const int to = power_of_two ? rank_ ^ k : (rank_ + k) % ranks_;
        const int from = power_of_two ? rank_ ^ k : (rank_ - k + ranks_) % ranks_;
        const auto t = static_cast<std::size_t>(to), f = static_cast<std::size_t>(from);
        HYMPI_MPI(MPI_Sendrecv(send + sd[t], sc[t], type, to, 0, recv + rd[f], rc[f], type, from, 0, comm,
                               MPI_STATUS_IGNORE));
        sent += static_cast<std::uint64_t>(sc[t]);
      }
      break;
    }
  }
  times_.bytes_sent += sent * sizeof(T);
}

template <class Run>
void Transpose::choose_tile(const Run& run) {
  // Timed on every rank, decided on the slowest rank's times, so that every rank picks the same tile.
  std::array<double, kTileCandidates.size()> seconds{};
  run(kTileCandidates[0]);  // first touch of the output, and warm caches for the first candidate
  for (std::size_t i = 0; i < kTileCandidates.size(); ++i) {
    double best = std::numeric_limits<double>::max();
    for (int rep = 0; rep < 2; ++rep) {
      const double t0 = MPI_Wtime();
      run(kTileCandidates[i]);
      best = std::min(best, MPI_Wtime() - t0);
    }
    seconds[i] = best;
  }
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, seconds.data(), static_cast<int>(seconds.size()), MPI_DOUBLE, MPI_MAX,
                          comm_.get()));
  options_.tile = kTileCandidates[static_cast<std::size_t>(std::min_element(seconds.begin(), seconds.end()) -
                                                           seconds.begin())];
  options_.tile_auto = true;
}

template <class T>
void Transpose::forward(std::span<const double> planes, std::span<double> pencils) {
  auto [send, recv] = buffers<T>();
  const long nx = n_[0], nl = pencil_lines().size();
  const Extent xs = planes_x(), ls = pencil_lines();
  const int threads = options_.pack_threads;
  const double t0 = MPI_Wtime();
  realign<true>(planes.data(), send, xs.size(), lines_, peer_lines_, send_displs_, rank_, threads);
  const double t1 = MPI_Wtime();
  exchange<T>(send, recv, true);
  const double t2 = MPI_Wtime();
  const TallRows tall{[&, planes](long x) { return planes.data() + (x - xs.begin) * lines_ + ls.begin; },
                      [&, recv = recv](long x) -> const T* { return recv + row_offset_[static_cast<std::size_t>(x)]; },
                      xs};
  const auto run = [&](TileShape tile) {
    local_transpose<true, T>(tall, pencils.data(), nx, nl, tile, threads);
  };
  if (options_.tile.automatic()) choose_tile(run);
  const double t3 = MPI_Wtime();
  run(options_.tile);
  const double t4 = MPI_Wtime();
  times_.pack_s += t1 - t0;
  times_.exchange_s += t2 - t1;
  times_.unpack_s += t4 - t3;
  ++times_.count;
}

template <class T>
void Transpose::backward(std::span<const double> pencils, std::span<double> planes) {
  auto [send, recv] = buffers<T>();
  const long nx = n_[0], nl = pencil_lines().size();
  const Extent xs = planes_x(), ls = pencil_lines();
  const int threads = options_.pack_threads;
  const TallRows tall{[&, planes](long x) { return planes.data() + (x - xs.begin) * lines_ + ls.begin; },
                      [&, send = send](long x) { return send + row_offset_[static_cast<std::size_t>(x)]; }, xs};
  const auto run = [&](TileShape tile) {
    local_transpose<false, T>(tall, pencils.data(), nx, nl, tile, threads);
  };
  if (options_.tile.automatic()) choose_tile(run);
  const double t0 = MPI_Wtime();
  run(options_.tile);
  const double t1 = MPI_Wtime();
  exchange<T>(send, recv, false);
  const double t2 = MPI_Wtime();
  realign<false>(planes.data(), recv, xs.size(), lines_, peer_lines_, send_displs_, rank_, threads);
  const double t3 = MPI_Wtime();
  times_.pack_s += t1 - t0;
  times_.exchange_s += t2 - t1;
  times_.unpack_s += t3 - t2;
  ++times_.count;
}

void Transpose::planes_to_pencils(std::span<const double> planes, std::span<double> pencils) {
  check_sizes(planes.size(), pencils.size(), "planes_to_pencils");
  if (options_.wire == WirePrecision::single_precision) {
    forward<float>(planes, pencils);
  } else {
    forward<double>(planes, pencils);
  }
}

void Transpose::pencils_to_planes(std::span<const double> pencils, std::span<double> planes) {
  check_sizes(planes.size(), pencils.size(), "pencils_to_planes");
  if (options_.wire == WirePrecision::single_precision) {
    backward<float>(pencils, planes);
  } else {
    backward<double>(pencils, planes);
  }
}

}  // namespace hympi::transpose
