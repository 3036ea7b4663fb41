// The transpose's three steps: realign (+ cast) each peer's block, exchange, blocked local transpose.
#include <mpi.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>

#include "hympi/core/error.hpp"
#include "hympi/core/memory.hpp"
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
/// own block goes to (comes from) `own`, or, when that is null, is skipped: the local transpose then
/// reads (writes) it in the planes directly.
template <bool ToBlocks, class Planes, class Blocks>
void realign(Planes* planes, Blocks* blocks, Blocks* own, long nx_local, long lines,
             std::span<const Extent> peer_lines, std::span<const int> displs, int self, int threads) {
  const long peers = static_cast<long>(peer_lines.size());
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (long r = 0; r < peers; ++r) {
    for (long i = 0; i < nx_local; ++i) {
      if (r == self && own == nullptr) continue;
      const Extent ls = peer_lines[static_cast<std::size_t>(r)];
      Planes* row = planes + i * lines + ls.begin;
      Blocks* block = (r == self ? own : blocks + displs[static_cast<std::size_t>(r)]) + i * ls.size();
      if constexpr (ToBlocks) {
        for (long l = 0; l < ls.size(); ++l) block[l] = static_cast<Blocks>(row[l]);
      } else {
        for (long l = 0; l < ls.size(); ++l) row[l] = static_cast<double>(block[l]);
      }
    }
  }
}

/// Where the rows of the tall nx x nl array are: this rank's own x rows (`own_row`: in its planes, or in
/// the own-block scratch with a single-precision wire), the other ranks' rows in the exchange buffer.
template <class OwnRow, class BufferRow>
struct TallRows {
  OwnRow own_row;
  BufferRow buffer_row;
  Extent own;  ///< this rank's x rows
};

/// Side of the register blocks: 4 x 4 doubles are four 256-bit rows, transposed in registers.
constexpr long kBlock = 4;

#if defined(__AVX__)
// The block is spelled out in AVX intrinsics in both directions and wire types: GCC 12 -O3 compiles the
// portable loops below into scalar conversions and stores for floats (2x the time of the double block), and
// for doubles into 16 one- or two-double loads (planes -> pencils) or 12 loads and 12 stores of one or two
// doubles (pencils -> planes), where 4 vector loads, 8 shuffles and 4 vector stores do. Narrow stores weigh
// more on Intel server cores (one store per cycle up to Skylake-SP, two on Zen 3). The intrinsics compile to
// the same operations under -march=znver3, skylake-avx512 and icelake-server (with AVX-512 GCC encodes the
// lane permutes as vshuff64x2), so a block measured on one runs the same way on the others.

/// m[i] lane j <-> m[j] lane i.
inline void transpose_in_registers(__m256d (&m)[kBlock]) {
  const __m256d t0 = _mm256_unpacklo_pd(m[0], m[1]), t1 = _mm256_unpackhi_pd(m[0], m[1]);
  const __m256d t2 = _mm256_unpacklo_pd(m[2], m[3]), t3 = _mm256_unpackhi_pd(m[2], m[3]);
  m[0] = _mm256_permute2f128_pd(t0, t2, 0x20);
  m[1] = _mm256_permute2f128_pd(t1, t3, 0x20);
  m[2] = _mm256_permute2f128_pd(t0, t2, 0x31);
  m[3] = _mm256_permute2f128_pd(t1, t3, 0x31);
}

/// Four consecutive values as doubles (floats widened exactly).
inline __m256d load4(const double* p) { return _mm256_loadu_pd(p); }
inline __m256d load4(const float* p) { return _mm256_cvtps_pd(_mm_loadu_ps(p)); }

/// Four doubles to consecutive places (to floats: rounded to nearest, as static_cast<float>); `streaming`
/// stores past the caches (the place must then be aligned to the store's width).
inline void store4(double* p, __m256d v, bool streaming) {
  if (streaming) {
    _mm256_stream_pd(p, v);
  } else {
    _mm256_storeu_pd(p, v);
  }
}
inline void store4(float* p, __m256d v, bool streaming) {
  if (streaming) {
    _mm_stream_ps(p, _mm256_cvtpd_ps(v));
  } else {
    _mm_storeu_ps(p, _mm256_cvtpd_ps(v));
  }
}
#endif

/// Values of type T in one cache line: the long side of the wide blocks, so that each row they write is
/// one whole line.
template <class T>
constexpr long kPerLine = static_cast<long>(kCacheLineBytes / sizeof(T));

/// Whether `p` starts a cache line: only then do streaming stores of a whole line go past the caches in
/// one write; a row that starts elsewhere is written through the caches.
inline bool starts_line(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kCacheLineBytes == 0; }

/// One XB x LB block, XB rows `rows[i]` from column l <-> pencils rows l..l+LB at column x (XB, LB
/// multiples of kBlock, transposed kBlock x kBlock at a time). Every row written gets its values in
/// consecutive stores, so that with `Streaming` a row of a whole line leaves in one write. Only widening
/// or only narrowing conversions happen here: GCC 12 at -O3 with AVX dropped the rounding of a narrowing
/// followed by a widening in this block (the rounding to the wire type is done by realign).
template <bool ToPencils, bool Streaming, long XB, long LB, class Row, class Pencils>
inline void register_block(Row* const* rows, long l, Pencils* pencils, long x, long nx) {
#if defined(__AVX__)
  if constexpr (ToPencils) {
    __m256d m[XB / kBlock][kBlock];
    for (long s = 0; s < XB / kBlock; ++s) {
      for (long i = 0; i < kBlock; ++i) m[s][i] = load4(rows[s * kBlock + i] + l);
      transpose_in_registers(m[s]);
    }
    for (long j = 0; j < LB; ++j) {
      Pencils* out = pencils + (l + j) * nx + x;
      const bool streaming = Streaming && starts_line(out);
      for (long s = 0; s < XB / kBlock; ++s) store4(out + s * kBlock, m[s][j], streaming);
    }
  } else {
    // kBlock rows at a time: the second half of each pencil line read comes right after the first, from L1.
    for (long xs = 0; xs < XB; xs += kBlock) {
      __m256d m[LB / kBlock][kBlock];
      for (long s = 0; s < LB / kBlock; ++s) {
        for (long j = 0; j < kBlock; ++j) m[s][j] = load4(pencils + (l + s * kBlock + j) * nx + x + xs);
        transpose_in_registers(m[s]);
      }
      for (long i = 0; i < kBlock; ++i) {
        const bool streaming = Streaming && starts_line(rows[xs + i] + l);
        for (long s = 0; s < LB / kBlock; ++s) store4(rows[xs + i] + l + s * kBlock, m[s][i], streaming);
      }
    }
  }
#else
  // Without AVX the stores go through the caches: the blocks' shapes stay, so the tiles mean the same.
  using Value = std::remove_const_t<Row>;
  if constexpr (ToPencils) {
    for (long j = 0; j < LB; ++j)
      for (long i = 0; i < XB; ++i) pencils[(l + j) * nx + x + i] = static_cast<double>(rows[i][l + j]);
  } else {
    for (long i = 0; i < XB; ++i)
      for (long j = 0; j < LB; ++j) rows[i][l + j] = static_cast<Value>(pencils[(l + j) * nx + x + i]);
  }
#endif
}

/// Rows [xa, xb) x lines [l0, l1) of the tall array <-> the pencils in XB x LB register blocks; what is
/// left at the edges in kBlock x kBlock blocks, then element-wise.
template <bool ToPencils, bool Streaming, long XB, long LB, class RowFn, class Pencils>
void transpose_part(const RowFn& row, long xa, long xb, long l0, long l1, Pencils* pencils, long nx) {
  using Row = std::remove_pointer_t<decltype(row(0L))>;
  constexpr bool kWide = XB > kBlock || LB > kBlock;
  const auto edge = [&](long x0, long x1, long la, long lb) {
    if constexpr (kWide) {
      transpose_part<ToPencils, false, kBlock, kBlock>(row, x0, x1, la, lb, pencils, nx);
    } else {
      for (long x = x0; x < x1; ++x) {
        for (long l = la; l < lb; ++l) {
          if constexpr (ToPencils) {
            pencils[l * nx + x] = static_cast<double>(row(x)[l]);
          } else {
            row(x)[l] = static_cast<std::remove_const_t<Row>>(pencils[l * nx + x]);
          }
        }
      }
    }
  };
  long x = xa;
  for (; x + XB <= xb; x += XB) {
    Row* rows[XB];
    for (long i = 0; i < XB; ++i) rows[i] = row(x + i);
    long l = l0;
    for (; l + LB <= l1; l += LB) register_block<ToPencils, Streaming, XB, LB>(rows, l, pencils, x, nx);
    edge(x, x + XB, l, l1);
  }
  edge(x, xb, l0, l1);
}

/// The tall array <-> pencils nl x nx, tile by tile so that both the rows read and the rows written
/// of one tile stay in cache. The blocks cover a whole line of each pencil row (written or read) and of
/// each tall row written, so that streaming stores write whole lines and no line is read twice.
template <bool ToPencils, bool Streaming, class OwnRow, class BufferRow, class Pencils>
void local_transpose(const TallRows<OwnRow, BufferRow>& tall, Pencils* pencils, long nx, long nl, TileShape tile,
                     int threads) {
  using Written = std::remove_pointer_t<decltype(tall.own_row(0L))>;
  constexpr long XB = kPerLine<double>;  // a whole line of each pencil row, written or read
  constexpr long LB = ToPencils ? kBlock : kPerLine<std::remove_const_t<Written>>;
  const long tr = tile.rows, tc = tile.cols;
  const long row_tiles = (nx + tr - 1) / tr, col_tiles = (nl + tc - 1) / tc;
  const Extent own = tall.own;
#pragma omp parallel num_threads(threads)
  {
#pragma omp for collapse(2) schedule(static)
    for (long bl = 0; bl < col_tiles; ++bl) {
      for (long bx = 0; bx < row_tiles; ++bx) {
        const long l0 = bl * tc, l1 = std::min(l0 + tc, nl), x0 = bx * tr, x1 = std::min(x0 + tr, nx);
        const auto part = [&](const auto& row, long xa, long xb) {
          transpose_part<ToPencils, Streaming, XB, LB>(row, xa, xb, l0, l1, pencils, nx);
        };
        part(tall.buffer_row, x0, std::min(x1, own.begin));
        part(tall.own_row, std::max(x0, own.begin), std::min(x1, own.end));
        part(tall.buffer_row, std::max(x0, own.end), x1);
      }
    }
#if defined(__AVX__)
    // Streaming stores are weakly ordered: fenced before the barrier, so every thread (and MPI) after it
    // sees them.
    if constexpr (Streaming) _mm_sfence();
#endif
  }
}

/// local_transpose with the tile's kind of stores.
template <bool ToPencils, class OwnRow, class BufferRow, class Pencils>
void local_transpose(const TallRows<OwnRow, BufferRow>& tall, Pencils* pencils, long nx, long nl, TileShape tile,
                     int threads) {
  if (tile.streaming) {
    local_transpose<ToPencils, true>(tall, pencils, nx, nl, tile, threads);
  } else {
    local_transpose<ToPencils, false>(tall, pencils, nx, nl, tile, threads);
  }
}

/// Where this rank's tall array lives: row x of the own block at own_rows + (x - own.begin) * own_stride,
/// the others' at buffer + offset[x].
struct TallLayout {
  Extent own;
  long own_stride;
  const std::size_t* offset;
};

/// The TallRows of `layout` over these pointers (const for the side that is read). With a double wire
/// the own rows are in the planes (this rank's lines of each x row); with a single wire in the own-block
/// scratch, where they were rounded to float (rows of this rank's lines).
template <class Wire, class Planes, class Buffer>
auto tall_rows(Planes* planes, Buffer* own, Buffer* buffer, const TallLayout& layout, long line_begin) {
  const auto buffer_row = [buffer, layout](long x) { return buffer + layout.offset[x]; };
  if constexpr (std::is_same_v<Wire, double>) {
    return TallRows{[planes, layout, line_begin](long x) {
                      return planes + (x - layout.own.begin) * layout.own_stride + line_begin;
                    },
                    buffer_row, layout.own};
  } else {
    return TallRows{[own, layout](long x) { return own + (x - layout.own.begin) * layout.own_stride; }, buffer_row,
                    layout.own};
  }
}

/// Candidates of the automatic tile (rows along x x columns along lines, multiples of the wide blocks):
/// flat, square and tall ones, since the best depends on the cache sizes and on how tall the array is
/// (64 x 512, 128 x 128 and 8 x 256 each came out best on a 2-core EPYC VM, within its noise), each with
/// stores through the caches and streaming ones. Streaming stores leave the output out of the caches, a
/// loss when it fits there and is read next; they took the blocked transpose of 4 M doubles a rank from
/// 10-14 ms (whole lines written through the caches) to 3.1-4.3 ms on a 2-core Intel Xeon VM (two ranks),
/// where each line written through the caches is first read for ownership.
constexpr auto kTileCandidates = [] {
  constexpr std::array<TileShape, 8> shapes{
      {{8, 256}, {8, 1024}, {16, 128}, {32, 32}, {32, 256}, {64, 64}, {64, 512}, {128, 128}}};
  std::array<TileShape, 2 * shapes.size()> out{};
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    out[2 * i] = shapes[i];
    out[2 * i + 1] = {shapes[i].rows, shapes[i].cols, true};
  }
  return out;
}();

}  // namespace

template <class T>
Transpose::Buffers<T> Transpose::buffers() noexcept {
  if constexpr (std::is_same_v<T, float>) {
    return {send_f_.data(), recv_f_.data(), own_f_.data()};
  } else {
    return {send_d_.data(), recv_d_.data(), nullptr};
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
void Transpose::choose_tile(const Run& run, TileShape& tile) {
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
  tile = kTileCandidates[static_cast<std::size_t>(std::min_element(seconds.begin(), seconds.end()) -
                                                   seconds.begin())];
  options_.tile_auto = true;
}

template <class T>
void Transpose::forward(std::span<const double> planes, std::span<double> pencils) {
  const auto [send, recv, own] = buffers<T>();
  const long nx = n_[0], nl = pencil_lines().size();
  const int threads = options_.pack_threads;
  const double t0 = MPI_Wtime();
  realign<true>(planes.data(), send, own, planes_x().size(), lines_, peer_lines_, send_displs_, rank_, threads);
  const double t1 = MPI_Wtime();
  exchange<T>(send, recv, true);
  const double t2 = MPI_Wtime();
  const TallLayout layout{planes_x(), std::is_same_v<T, double> ? lines_ : nl, row_offset_.data()};
  const auto tall = tall_rows<T>(planes.data(), static_cast<const T*>(own), static_cast<const T*>(recv), layout,
                                 pencil_lines().begin);
  const auto run = [&](TileShape tile) { local_transpose<true>(tall, pencils.data(), nx, nl, tile, threads); };
  if (options_.tile.automatic()) choose_tile(run, options_.tile);
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
  const auto [send, recv, own] = buffers<T>();
  const long nx = n_[0], nl = pencil_lines().size();
  const int threads = options_.pack_threads;
  const TallLayout layout{planes_x(), std::is_same_v<T, double> ? lines_ : nl, row_offset_.data()};
  const auto tall = tall_rows<T>(planes.data(), own, send, layout, pencil_lines().begin);
  const auto run = [&](TileShape tile) { local_transpose<false>(tall, pencils.data(), nx, nl, tile, threads); };
  if (options_.backward_tile.automatic()) choose_tile(run, options_.backward_tile);
  const double t0 = MPI_Wtime();
  run(options_.backward_tile);
  const double t1 = MPI_Wtime();
  exchange<T>(send, recv, false);
  const double t2 = MPI_Wtime();
  realign<false>(planes.data(), recv, own, planes_x().size(), lines_, peer_lines_, send_displs_, rank_, threads);
  const double t3 = MPI_Wtime();
  times_.pack_s += t1 - t0;
  times_.exchange_s += t2 - t1;
  times_.unpack_s += t3 - t2;
  ++times_.count;
}

namespace {
/// Calls `step` with a value of the type the wire carries, so that one call picks forward<float> or forward<double>.
template <class Step>
void on_the_wire(WirePrecision wire, const Step& step) {
  if (wire == WirePrecision::single_precision) {
    step(float{});
  } else {
    step(double{});
  }
}
}  // namespace

void Transpose::planes_to_pencils(std::span<const double> planes, std::span<double> pencils) {
  check_sizes(planes.size(), pencils.size(), "planes_to_pencils");
  on_the_wire(options_.wire, [&]<class T>(T) { forward<T>(planes, pencils); });
}

void Transpose::pencils_to_planes(std::span<const double> pencils, std::span<double> planes) {
  check_sizes(planes.size(), pencils.size(), "pencils_to_planes");
  on_the_wire(options_.wire, [&]<class T>(T) { backward<T>(pencils, planes); });
}

}  // namespace hympi::transpose
