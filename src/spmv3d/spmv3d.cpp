#include "hympi/spmv3d/spmv3d.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>

// The stencil's row kernels are vectorised by hand for AVX-512 and for AVX2 + FMA (lane shifts
// and masked loads that compilers do not generate from the scalar loop); other targets run that loop.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define HYMPI_SPMV_SIMD 1
#endif

#include "hympi/core/error.hpp"
#include "hympi/grid/exact_sum.hpp"

namespace hympi {

namespace {

constexpr const char* kAxis[3] = {"x", "y", "z"};

std::string grid_text(const std::array<long, 3>& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]);
}

/// Number of in-grid points among {g-1, g, g+1} on an axis of n points.
long span3(long g, long n) { return 1 + (g > 0 ? 1 : 0) + (g < n - 1 ? 1 : 0); }

}  // namespace

std::array<int, 3> process_grid_for_local(int ranks, const std::array<long, 3>& local,
                                          const std::array<int, 3>& fixed) {
  if (ranks < 1) throw InvalidArgument("number of ranks must be >= 1, got " + std::to_string(ranks));
  std::array<int, 3> best{0, 0, 0};
  double best_area = std::numeric_limits<double>::infinity();
  for (const auto& p : process_grid_factorisations(ranks, fixed)) {
    std::array<double, 3> g{};
    for (int d = 0; d < 3; ++d) g[d] = static_cast<double>(local[d]) * p[d];
    const double area = internal_face_area(p, g);
    if (area < best_area) {
      best_area = area;
      best = p;
    }
  }
  if (best[0] == 0) {
    // Only the fixed entries can exclude every factorisation: say what their product is.
    long product = 1;
    for (int f : fixed) product *= f > 0 ? f : 1;
    const bool all_fixed = fixed[0] > 0 && fixed[1] > 0 && fixed[2] > 0;
    throw InvalidArgument("process grid (--dims) " + std::to_string(fixed[0]) + " " + std::to_string(fixed[1]) + " " +
                          std::to_string(fixed[2]) + (all_fixed ? " has " : ": the fixed entries' product ") +
                          std::to_string(product) + (all_fixed ? " ranks, but the run has " : " does not divide the ") +
                          std::to_string(ranks) + (all_fixed ? "" : " ranks of the run"));
  }
  return best;
}

double spmv3d_nonzeros(const std::array<long, 3>& global) {
  double nnz = 1;
  for (long n : global) nnz *= static_cast<double>(3 * n - 2);
  return nnz;
}

std::pair<std::array<long, 3>, std::array<int, 3>> Spmv3dOptions::resolve(int ranks) const {
  const bool local = per_rank[0] > 0 || per_rank[1] > 0 || per_rank[2] > 0;
  for (int d = 0; d < 3; ++d) {
    if (dims[d] < 0) throw InvalidArgument("process grid entries must be >= 0, got " + std::to_string(dims[d]));
    if (local && per_rank[d] < 1)
      throw InvalidArgument("per-rank grid size must be >= 1 on every axis, got " + grid_text(per_rank));
    if (!local && global[d] < 1)
      throw InvalidArgument("grid size must be >= 1 on every axis, got " + grid_text(global));
  }
  if (!local) return {global, choose_process_grid(ranks, global, dims)};
  const auto p = process_grid_for_local(ranks, per_rank, dims);
  return {{per_rank[0] * p[0], per_rank[1] * p[1], per_rank[2] * p[2]}, p};
}

void Spmv3dOptions::validate(int ranks, int threads) const {
  if (ghost < 1) throw InvalidArgument("ghost width must be >= 1, got " + std::to_string(ghost));
  if (spmv_reps < 1) throw InvalidArgument("SpMV repetitions must be >= 1, got " + std::to_string(spmv_reps));
  if (!(min_time_s >= 0.0 && std::isfinite(min_time_s)))
    throw InvalidArgument("minimum time must be a number of seconds >= 0, got " + std::to_string(min_time_s));
  if (cg_iterations < 0) throw InvalidArgument("CG iterations must be >= 0, got " + std::to_string(cg_iterations));
  if (!(cg_tolerance > 0.0 && cg_tolerance < 1.0))
    throw InvalidArgument("CG tolerance must be in (0, 1), got " + std::to_string(cg_tolerance));
  overlap.validate(threads);
  const auto [g, p] = resolve(ranks);
  for (int d = 0; d < 3; ++d) {
    const long smallest = g[d] / p[d];
    if (ghost > smallest)
      throw InvalidArgument("ghost width " + std::to_string(ghost) + " is larger than the smallest local block (" +
                            std::to_string(smallest) + " points on axis " + kAxis[d] + " of the " + grid_text(g) +
                            " grid over " + std::to_string(p[0]) + "x" + std::to_string(p[1]) + "x" +
                            std::to_string(p[2]) + " ranks)");
  }
  if (op == SpmvOperator::csr) {
    std::array<long, 3> largest{};
    for (int d = 0; d < 3; ++d) largest[d] = (g[d] + p[d] - 1) / p[d];
    const GridIndexing indexing(largest, ghost, sizeof(double));
    if (indexing.size >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
      throw InvalidArgument("local block of " + std::to_string(indexing.size) +
                            " points is too large for 32-bit CSR column indexes");
  }
}

void Spmv3dOptions::validate(int ranks) const { validate(ranks, omp_get_max_threads()); }

nlohmann::json Spmv3dOptions::to_json() const {
  return {{"global", global},         {"per_rank", per_rank},         {"dims", dims},
          {"ghost", ghost},           {"operator", to_string(op)},    {"overlap", overlap.to_json()},
          {"spmv_reps", spmv_reps},   {"cg_iterations", cg_iterations}, {"cg_tolerance", cg_tolerance},
          {"streaming_stores", to_string(streaming_stores)}, {"min_time_s", min_time_s}};
}

// --- operator -----------------------------------------------------------------------------

Operator27::Operator27(const CartDecomposition& cart, const Spmv3dOptions& options)
    : cart_(cart),
      ghost_(options.ghost),
      op_(options.op),
      driver_(cart, Grid3D<double>(cart.local_box(), options.ghost), HaloPattern::full, 1, options.overlap) {
  const double y_bytes = 8.0 * static_cast<double>(cart.local_box().count());
  streaming_ = options.streaming_stores == StreamingStores::on ||
               (options.streaming_stores == StreamingStores::automatic && y_bytes >= kSpmv3dStreamingBytes);
#ifndef HYMPI_SPMV_SIMD
  streaming_ = false;  // no vector kernel: plain stores
#endif
  if (op_ != SpmvOperator::csr) return;
  const Box3& box = cart.local_box();
  const auto n = box.size();
  const auto& global = cart.global();
  const long rows = n[0] * n[1] * n[2];
  // Row lengths are known in closed form, so the prefix sum needs no pass over the matrix.
  row_start_.reset(new std::int64_t[static_cast<std::size_t>(rows + 1)]);
  std::int64_t offset = 0;
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j) {
      const long cyz = span3(box.low[1] + j, global[1]) * span3(box.low[2] + k, global[2]);
      for (long i = 0; i < n[0]; ++i) {
        row_start_[static_cast<std::size_t>((k * n[1] + j) * n[0] + i)] = offset;
        offset += cyz * span3(box.low[0] + i, global[0]);
      }
    }
  row_start_[static_cast<std::size_t>(rows)] = offset;
  nonzeros_ = static_cast<std::size_t>(offset);
  columns_.reset(new std::int32_t[nonzeros_]);
  values_.reset(new double[nonzeros_]);
  const GridIndexing indexing(n, ghost_, sizeof(double));  // the vectors' indexing: columns are their indexes
  std::int64_t* start = row_start_.get();
  std::int32_t* cols = columns_.get();
  double* vals = values_.get();
  // Same static row schedule as the kernels, so each thread first-touches the rows it reads.
#pragma omp parallel for collapse(2) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        std::int64_t e = start[(k * n[1] + j) * n[0] + i];
        // Neighbours in (dz, dy, dx) order, then the diagonal.
        for (int dz = -1; dz <= 1; ++dz)
          for (int dy = -1; dy <= 1; ++dy)
            for (int dx = -1; dx <= 1; ++dx) {
              if (dx == 0 && dy == 0 && dz == 0) continue;
              const long gi = box.low[0] + i + dx, gj = box.low[1] + j + dy, gk = box.low[2] + k + dz;
              if (gi < 0 || gi >= global[0] || gj < 0 || gj >= global[1] || gk < 0 || gk >= global[2]) continue;
              cols[e] = static_cast<std::int32_t>(indexing.index(i + dx, j + dy, k + dz));
              vals[e] = -1.0;
              ++e;
            }
        cols[e] = static_cast<std::int32_t>(indexing.index(i, j, k));
        vals[e] = 26.0;
      }
}

double Operator27::bytes_per_apply() const {
  const double points = static_cast<double>(cart_.local_box().count());
  // x read and y written once (write-allocate not counted, as in STREAM).
  double bytes = 16.0 * points;
  if (op_ == SpmvOperator::csr)
    bytes += static_cast<double>(nonzeros_) * (sizeof(double) + sizeof(std::int32_t)) +
             (points + 1) * sizeof(std::int64_t);
  return bytes;
}

namespace {

// The stencil's value at a point, the same bits in every code path below: with the column sum
//   col(i) = (((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))) + r8   (the 9 rows at x = i)
// y(i) = fma(27, x(i), -((col(i - 1) + col(i)) + col(i + 1))) = 27 x - (3x3x3 box sum), rounded
// once at the end (explicit fma: the rounding must not depend on the compiler's contraction
// choices). Each value is a fixed expression of x, whatever box computes it: same bits for
// every tile, strategy and layout, and for every instruction set below.

/// col(i) of the 9 rows.
inline double column_sum(const double* const r[9], long i) {
  return (((r[0][i] + r[1][i]) + (r[2][i] + r[3][i])) + ((r[4][i] + r[5][i]) + (r[6][i] + r[7][i]))) + r[8][i];
}

/// y at point i of a row, scalar.
inline double stencil27_point(const double* const r[9], long i) {
  return std::fma(27.0, r[4][i], -((column_sum(r, i - 1) + column_sum(r, i)) + column_sum(r, i + 1)));
}

/// The 9 rows of x around the row starting at `c` (dz, dy in -1..1, z outer; strides sy, sz),
/// in the order the kernels take them.
inline std::array<const double*, 9> rows_around(const double* c, long sy, long sz) {
  return {c - sz - sy, c - sz, c - sz + sy, c - sy, c, c + sy, c + sz - sy, c + sz, c + sz + sy};
}

#if defined(__AVX512F__)
/// The vector operations the row kernels need, on 8 lanes of AVX-512.
struct Simd {
  using Vec = __m512d;
  using Mask = __mmask8;
  static constexpr long kLanes = 8;

  /// The first `n` lanes (clipped to 0 .. kLanes).
  static Mask first_lanes(long n) {
    if (n >= 8) return static_cast<Mask>(0xff);
    return n <= 0 ? static_cast<Mask>(0) : static_cast<Mask>((1u << n) - 1);
  }
  /// The last lane only.
  static Mask last_lane() { return static_cast<Mask>(0x80); }
  static Vec load(const double* p) { return _mm512_loadu_pd(p); }
  /// Lanes outside `m` are zero and not loaded, so they may lie past the allocation.
  static Vec load(const double* p, Mask m) { return _mm512_maskz_loadu_pd(m, p); }
  static Vec add(Vec a, Vec b) { return _mm512_add_pd(a, b); }
  static Vec splat(double v) { return _mm512_set1_pd(v); }
  /// a * b - c, rounded once, exactly like fma(a, b, -c).
  static Vec fmsub(Vec a, Vec b, Vec c) { return _mm512_fmsub_pd(a, b, c); }
  static void store(double* p, Vec v) { _mm512_storeu_pd(p, v); }
  static void store(double* p, Vec v, Mask m) { _mm512_mask_storeu_pd(p, m, v); }
  /// Non-temporal store; `p` must be 64-byte aligned.
  static void stream(double* p, Vec v) { _mm512_stream_pd(p, v); }
  /// (prev[7], cur[0 .. 6]): the left neighbours of cur's lanes. maskz with all lanes is the
  /// same instruction as plain alignr, without GCC 12's false maybe-uninitialized warning.
  static Vec shift_in_prev(Vec prev, Vec cur) { return align<7>(cur, prev); }
  /// (cur[1 .. 7], next[0]): the right neighbours of cur's lanes.
  static Vec shift_in_next(Vec cur, Vec next) { return align<1>(next, cur); }

 private:
  /// Lanes Shift .. Shift + 7 of the 16-lane concatenation (hi:lo).
  template <int Shift>
  static Vec align(Vec hi, Vec lo) {
    return _mm512_castsi512_pd(
        _mm512_maskz_alignr_epi64(0xff, _mm512_castpd_si512(hi), _mm512_castpd_si512(lo), Shift));
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
/// The vector operations the row kernels need, on 4 lanes of AVX2 (+ FMA).
struct Simd {
  using Vec = __m256d;
  using Mask = __m256i;
  static constexpr long kLanes = 4;

  /// The first `n` lanes (clipped to 0 .. kLanes): lane q is set where n > q.
  static Mask first_lanes(long n) { return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_set_epi64x(3, 2, 1, 0)); }
  /// The last lane only.
  static Mask last_lane() { return _mm256_set_epi64x(-1, 0, 0, 0); }
  static Vec load(const double* p) { return _mm256_loadu_pd(p); }
  /// Lanes outside `m` are zero and not loaded, so they may lie past the allocation.
  static Vec load(const double* p, Mask m) { return _mm256_maskload_pd(p, m); }
  static Vec add(Vec a, Vec b) { return _mm256_add_pd(a, b); }
  static Vec splat(double v) { return _mm256_set1_pd(v); }
  /// a * b - c, rounded once, exactly like fma(a, b, -c).
  static Vec fmsub(Vec a, Vec b, Vec c) { return _mm256_fmsub_pd(a, b, c); }
  static void store(double* p, Vec v) { _mm256_storeu_pd(p, v); }
  static void store(double* p, Vec v, Mask m) { _mm256_maskstore_pd(p, m, v); }
  /// Non-temporal store; `p` must be 32-byte aligned.
  static void stream(double* p, Vec v) { _mm256_stream_pd(p, v); }
  /// (prev[3], cur[0 .. 2]): the left neighbours of cur's lanes.
  static Vec shift_in_prev(Vec prev, Vec cur) { return _mm256_shuffle_pd(straddle(prev, cur), cur, 0b0101); }
  /// (cur[1 .. 3], next[0]): the right neighbours of cur's lanes.
  static Vec shift_in_next(Vec cur, Vec next) { return _mm256_shuffle_pd(cur, straddle(cur, next), 0b0101); }

 private:
  /// (a[2], a[3], b[0], b[1]): the one lane-crossing step of both shifts, shared by the two
  /// shifts at the same vector boundary (the compiler merges them), the rest is in-lane.
  static Vec straddle(Vec a, Vec b) { return _mm256_permute2f128_pd(a, b, 0x21); }
};
#endif

#ifdef HYMPI_SPMV_SIMD
using Vec = Simd::Vec;
using Mask = Simd::Mask;
constexpr long kLanes = Simd::kLanes;

/// The column sums of kLanes points from their 9 rows, v[q] = row q at those points.
inline Vec column_sums(const Vec* v) {
  const Vec a = Simd::add(v[0], v[1]), b = Simd::add(v[2], v[3]);
  const Vec c = Simd::add(v[4], v[5]), d = Simd::add(v[6], v[7]);
  return Simd::add(Simd::add(Simd::add(a, b), Simd::add(c, d)), v[8]);
}

/// col(i .. i + kLanes - 1), lanes outside `mask` zero.
inline Vec column_sums(const double* const r[9], long i, Mask mask) {
  Vec v[9];
  for (int q = 0; q < 9; ++q) v[q] = Simd::load(r[q] + i, mask);
  return column_sums(v);
}

/// (col(p - 1) + col(p)) + col(p + 1) for the points of `cur`, from the column sums of the
/// vectors before and after it.
inline Vec box_sums(Vec prev, Vec cur, Vec next) {
  return Simd::add(Simd::add(Simd::shift_in_prev(prev, cur), cur), Simd::shift_in_next(cur, next));
}
#endif

/// y(0 .. len-1) of one row: `r` are the 9 rows of x (dz, dy in -1..1, z outer) at the row's
/// first point, read at -1 .. len; `out` is y at that point.
///
/// One pass: each column sum is computed once (9 loads per point, not 27) and kept in
/// registers; its neighbours come from lane shifts, not from a buffer that a second loop
/// re-reads. With AVX-512 this ran ~10-15 % faster than the two-loop version on the
/// memory-bound 256^3 problem of docs/performance.md (the kernel is cheap enough to hide
/// behind the memory traffic). `streaming` writes y with non-temporal stores.
void stencil27_row(const double* const r[9], double* out, long len, bool streaming) {
#ifdef HYMPI_SPMV_SIMD
  long i = 0;
  if (streaming) {
    // Scalar head up to the first 64-byte boundary of y: streamed stores must be aligned.
    const auto misaligned = reinterpret_cast<std::uintptr_t>(out) & 63;
    const long head = static_cast<long>(((64 - misaligned) & 63) / sizeof(double));
    for (; i < head && i < len; ++i) out[i] = stencil27_point(r, i);
    if (i >= len) return;
  }
  const Vec c27 = Simd::splat(27.0);
  Vec prev = column_sums(r, i - kLanes, Simd::last_lane());       // last lane: col(i - 1)
  Vec cur = column_sums(r, i, Simd::first_lanes(len - i + 1));  // col(i .. min(i + kLanes - 1, len))
  for (; i < len; i += kLanes) {
    const long rem = len - i;
    const Vec next = column_sums(r, i + kLanes, Simd::first_lanes(rem - kLanes + 1));  // up to col(len)
    const Vec sum = box_sums(prev, cur, next);
    if (rem >= kLanes) {
      const Vec value = Simd::fmsub(c27, Simd::load(r[4] + i), sum);
      if (streaming)
        Simd::stream(out + i, value);
      else
        Simd::store(out + i, value);
    } else {
      const Mask m = Simd::first_lanes(rem);
      Simd::store(out + i, Simd::fmsub(c27, Simd::load(r[4] + i, m), sum), m);
    }
    prev = cur;
    cur = next;
  }
#else
  // No vector kernel: a chunk's column sums into a buffer (each computed once, not three times),
  // then the sliding 3-wide sum; plain stores.
  (void)streaming;
  constexpr long kChunk = 256;
  double col[kChunk + 2];
  for (long i0 = 0; i0 < len; i0 += kChunk) {
    const long m = std::min(kChunk, len - i0);
#pragma omp simd
    for (long t = -1; t <= m; ++t) col[t + 1] = column_sum(r, i0 + t);
#pragma omp simd
    for (long t = 0; t < m; ++t) out[i0 + t] = std::fma(27.0, r[4][i0 + t], -((col[t] + col[t + 1]) + col[t + 2]));
  }
#endif
}

/// The rows at (j, k) and (j, k + 1) of y, from `x` at the first point of the (j, k) row
/// (strides sy, sz). The two rows read 12 rows of x, not 18: planes k and k + 1 are loaded
/// once for both. That halves the on-chip traffic from the plane cache, which is what held
/// the one-row kernel to ~0.55 of the triad bound on the 256^3 problem (docs/performance.md).
/// Same expression per point as stencil27_row, so the same bits. `streaming` writes y with
/// non-temporal stores where both rows start on a cache line (Grid3D aligns untiled rows).
void stencil27_row_pair(const double* x, long sy, long sz, double* out, long len, bool streaming) {
#ifdef HYMPI_SPMV_SIMD
  // Past the row's end this touches the next row (or, at the block's end, nothing that faults).
  constexpr std::uintptr_t kPrefetchBytes = 1024;
  const double* r[12];  // r[3 * (dz + 1) + (dy + 1)], dz in -1 .. 2
  for (int dz = -1; dz <= 2; ++dz)
    for (int dy = -1; dy <= 1; ++dy) r[3 * (dz + 1) + dy + 1] = x + dz * sz + dy * sy;
  const double* const* lower = r;      // planes k - 1 .. k + 1
  const double* const* upper = r + 3;  // planes k .. k + 2
  double* const out_upper = out + sz;
  const bool aligned =
      streaming && ((reinterpret_cast<std::uintptr_t>(out) | reinterpret_cast<std::uintptr_t>(out_upper)) & 63) == 0;
  const Vec c27 = Simd::splat(27.0);
  Vec prev_lo = column_sums(lower, -kLanes, Simd::last_lane());
  Vec cur_lo = column_sums(lower, 0, Simd::first_lanes(len + 1));
  Vec prev_up = column_sums(upper, -kLanes, Simd::last_lane());
  Vec cur_up = column_sums(upper, 0, Simd::first_lanes(len + 1));
  long i = 0;
  // A cache line of each row per step, so that streamed stores fill whole lines back to back
  // (AVX2's half-line streamed stores, interleaved between the rows, ran at half the speed of
  // plain stores on Zen 3). Full vectors while the last column sums needed, up to
  // col(i + kLine + kLanes - 1), lie inside the row and its right ghost.
  constexpr long kLine = 64 / sizeof(double);
  for (; i + kLine + kLanes <= len; i += kLine) {
    // Planes k + 1 and k + 2 come from memory (k - 1 and k from the cache, read by the pair
    // below). Prefetching plane k + 2 16 lines ahead gained ~5 % on the 256^3 product on
    // Sapphire Rapids; on Zen 3 every prefetch variant measured within noise (docs/performance.md).
    for (int q = 9; q < 12; ++q)
      _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<std::uintptr_t>(r[q] + i) + kPrefetchBytes),
                   _MM_HINT_T0);
    Vec value_lo[kLine / kLanes], value_up[kLine / kLanes];
    for (long u = 0; u < kLine / kLanes; ++u) {
      const long p = i + u * kLanes;
      Vec v[12];
      for (int q = 0; q < 12; ++q) v[q] = Simd::load(r[q] + p + kLanes);
      const Vec next_lo = column_sums(v), next_up = column_sums(v + 3);
      value_lo[u] = Simd::fmsub(c27, Simd::load(r[4] + p), box_sums(prev_lo, cur_lo, next_lo));
      value_up[u] = Simd::fmsub(c27, Simd::load(r[7] + p), box_sums(prev_up, cur_up, next_up));
      prev_lo = cur_lo;
      cur_lo = next_lo;
      prev_up = cur_up;
      cur_up = next_up;
    }
    const auto put_line = [aligned](double* line, const Vec* values) {
      for (long u = 0; u < kLine / kLanes; ++u) {
        if (aligned)
          Simd::stream(line + u * kLanes, values[u]);
        else
          Simd::store(line + u * kLanes, values[u]);
      }
    };
    put_line(out + i, value_lo);
    put_line(out_upper + i, value_up);
  }
  for (; i < len; i += kLanes) {
    const long rem = len - i;
    const Mask m = Simd::first_lanes(rem), m_next = Simd::first_lanes(rem - kLanes + 1);
    const Vec next_lo = column_sums(lower, i + kLanes, m_next), next_up = column_sums(upper, i + kLanes, m_next);
    Simd::store(out + i, Simd::fmsub(c27, Simd::load(r[4] + i, m), box_sums(prev_lo, cur_lo, next_lo)), m);
    Simd::store(out_upper + i, Simd::fmsub(c27, Simd::load(r[7] + i, m), box_sums(prev_up, cur_up, next_up)), m);
    prev_lo = cur_lo;
    cur_lo = next_lo;
    prev_up = cur_up;
    cur_up = next_up;
  }
#else
  for (long plane = 0; plane < 2; ++plane)
    stencil27_row(rows_around(x + plane * sz, sy, sz).data(), out + plane * sz, len, streaming);
#endif
}

}  // namespace

OverlapTimes Operator27::apply(Grid3D<double>& x, Grid3D<double>& y) {
  const double* xp = x.data().data();
  double* yp = y.data().data();
  const long sy = x.stride_y(), sz = x.stride_z();
  if (op_ == SpmvOperator::stencil) {
    const bool streaming = streaming_;
    const auto kernel = [&, xp, yp, sy, sz, streaming](const Box3& b) {
      const long len = b.high[0] - b.low[0];
      for (long k = b.low[2]; k < b.high[2]; k += 2)
        for (long j = b.low[1]; j < b.high[1]; ++j) {
          const long c = x.index(b.low[0], j, k);
          if (k + 1 < b.high[2]) {
            stencil27_row_pair(xp + c, sy, sz, yp + c, len, streaming);
          } else {
            stencil27_row(rows_around(xp + c, sy, sz).data(), yp + c, len, streaming);
          }
        }
#ifdef HYMPI_SPMV_SIMD
      // Streamed stores are weakly ordered: fence before another thread may read y.
      if (streaming) _mm_sfence();
#endif
    };
    return driver_.apply(x, kernel);
  }
  const std::int64_t* start = row_start_.get();
  const std::int32_t* cols = columns_.get();
  const double* vals = values_.get();
  const auto n = cart_.local_box().size();
  const auto kernel = [&, xp, yp, start, cols, vals](const Box3& b) {
    for (long k = b.low[2]; k < b.high[2]; ++k)
      for (long j = b.low[1]; j < b.high[1]; ++j) {
        const long row0 = (k * n[1] + j) * n[0];
        double* out = yp + x.index(0, j, k);
        for (long i = b.low[0]; i < b.high[0]; ++i) {
          double acc = 0.0;
          // Explicit fma: the rounding must not depend on the compiler's contraction choices.
          for (std::int64_t e = start[row0 + i]; e < start[row0 + i + 1]; ++e) acc = std::fma(vals[e], xp[cols[e]], acc);
          out[i] = acc;
        }
      }
  };
  return driver_.apply(x, kernel);
}

// --- verification helpers -----------------------------------------------------------------

namespace {
long global_id(const std::array<long, 3>& global, long gi, long gj, long gk) {
  return 1 + gi + global[0] * (gj + global[1] * gk);
}
}  // namespace

void spmv3d_fill_ids(const CartDecomposition& cart, Grid3D<double>& x) {
  const auto n = x.extent();
  const auto& global = cart.global();
#pragma omp parallel for collapse(2) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i)
        x(i, j, k) = static_cast<double>(global_id(global, x.global(0, i), x.global(1, j), x.global(2, k)));
}

long spmv3d_count_mismatches(const CartDecomposition& cart, const Grid3D<double>& y) {
  const auto n = y.extent();
  const auto& global = cart.global();
  long bad = 0;
#pragma omp parallel for collapse(2) schedule(static) reduction(+ : bad)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        const long gi = y.global(0, i), gj = y.global(1, j), gk = y.global(2, k);
        // Integers below 2^53 make the expected product exact in doubles as well.
        long expected = 27 * global_id(global, gi, gj, gk);
        for (long c = gk - 1; c <= gk + 1; ++c)
          for (long b = gj - 1; b <= gj + 1; ++b)
            for (long a = gi - 1; a <= gi + 1; ++a)
              if (a >= 0 && a < global[0] && b >= 0 && b < global[1] && c >= 0 && c < global[2])
                expected -= global_id(global, a, b, c);
        if (y(i, j, k) != static_cast<double>(expected)) ++bad;
      }
  long total = 0;
  HYMPI_MPI(MPI_Allreduce(&bad, &total, 1, MPI_LONG, MPI_SUM, cart.comm()));
  return total;
}

// --- CG -----------------------------------------------------------------------------------

namespace {

/// Sum over owned points of a[p] * b[p], exactly: the same bits for every layout (collective).
double dot(const Grid3D<double>& a, const Grid3D<double>& b, MPI_Comm comm, Metrics& metrics) {
  const auto n = a.extent();
  const double* pa = a.data().data();
  const double* pb = b.data().data();
  ExactSum total;
  {
    auto t = metrics.time("cg_dot", PhaseKind::computation);
#pragma omp parallel
    {
      ExactSum mine;
#pragma omp for collapse(2) schedule(static)
      for (long k = 0; k < n[2]; ++k)
        for (long j = 0; j < n[1]; ++j) {
          const long row = a.index(0, j, k);
          for (long i = 0; i < n[0]; ++i) mine.add(pa[row + i] * pb[row + i]);
        }
#pragma omp critical(hympi_spmv3d_dot)
      total.merge(mine);
    }
  }
  auto t = metrics.time("cg_allreduce", PhaseKind::communication);
  total.allreduce(comm);
  return total.value();
}

/// Calls f(row_offset, length) for every owned row, static schedule.
template <class F>
void for_rows(const Grid3D<double>& g, F&& f) {
  const auto n = g.extent();
#pragma omp parallel for collapse(2) schedule(static)
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j) f(g.index(0, j, k), n[0]);
}

/// The manufactured solution: smooth, but no eigenvector, so CG has real work to do.
double manufactured(long gi, long gj, long gk) {
  return 1.0 + 0.5 * std::sin(0.3 * static_cast<double>(gi) + 0.7 * static_cast<double>(gj) +
                              1.1 * static_cast<double>(gk));
}

}  // namespace

Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& metrics) {
  return run_spmv3d(comm, options, metrics, metrics);
}

Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& spmv_metrics, Metrics& cg_metrics) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  const auto [global, dims] = options.resolve(ranks);
  CartDecomposition cart(comm, {global, {false, false, false}, dims});
  Operator27 op(cart, options);
  Spmv3dResult result;
  result.global = global;
  result.dims = cart.dims();
  result.nonzeros = spmv3d_nonzeros(global);
  result.streaming_stores = op.streaming_stores();

  // Repeated SpMV on x = ids: the product is exact in doubles and checked point by point.
  {
    auto x = op.make_vector();
    auto y = op.make_vector();
    spmv3d_fill_ids(cart, x);
    op.apply(x, y);  // warm-up: page faults of the buffers, first MPI connections
    HYMPI_MPI(MPI_Barrier(cart.comm()));
    OverlapTimes local;
    constexpr long kMaxReps = std::numeric_limits<int>::max() / 2;
    int target = options.spmv_reps;
    int done = 0;
    const double t0 = MPI_Wtime();
    while (done < target) {
      for (; done < target; ++done) local += op.apply(x, y);
      if (options.min_time_s > 0) {
        // The slowest rank's time decides, so every rank computes the same new target.
        const double so_far = MPI_Wtime() - t0;
        double slowest = 0;
        HYMPI_MPI(MPI_Allreduce(&so_far, &slowest, 1, MPI_DOUBLE, MPI_MAX, cart.comm()));
        target = static_cast<int>(repetitions_for_min_time(done, slowest, options.min_time_s, kMaxReps));
      }
    }
    const double elapsed = MPI_Wtime() - t0;
    spmv_metrics.add("spmv_halo", PhaseKind::communication, local.comm_s);
    spmv_metrics.add("spmv_compute", PhaseKind::computation, local.comp_s);
    HYMPI_MPI(MPI_Allreduce(&elapsed, &result.spmv_time_s, 1, MPI_DOUBLE, MPI_MAX, cart.comm()));
    std::array<double, 3> mine{local.wall_s, local.comm_s, local.comp_s}, sum{};
    HYMPI_MPI(MPI_Allreduce(mine.data(), sum.data(), 3, MPI_DOUBLE, MPI_SUM, cart.comm()));
    result.spmv_times = {sum[0] / ranks, sum[1] / ranks, sum[2] / ranks};
    result.spmv_reps = done;
    result.spmv_flops = 2.0 * result.nonzeros * done;
    double bytes = op.bytes_per_apply() * done;
    HYMPI_MPI(MPI_Allreduce(&bytes, &result.spmv_bytes, 1, MPI_DOUBLE, MPI_SUM, cart.comm()));
    result.spmv_mismatches = spmv3d_count_mismatches(cart, y);
  }
  if (options.cg_iterations == 0) return result;

  // CG on A x = b with b = A x*, from x = 0.
  auto xs = op.make_vector();
  auto b = op.make_vector();
  {
    const auto n = xs.extent();
#pragma omp parallel for collapse(2) schedule(static)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) xs(i, j, k) = manufactured(xs.global(0, i), xs.global(1, j), xs.global(2, k));
    op.apply(xs, b);
  }
  auto x = op.make_vector();
  auto r = op.make_vector();
  auto p = op.make_vector();
  auto q = op.make_vector();
  double* px = x.data().data();
  double* pr = r.data().data();
  double* pp = p.data().data();
  double* pq = q.data().data();
  const double* pb = b.data().data();
  for_rows(r, [&](long o, long len) {
    for (long i = o; i < o + len; ++i) pr[i] = pp[i] = pb[i];
  });
  HYMPI_MPI(MPI_Barrier(cart.comm()));
  const double t0 = MPI_Wtime();
  double rr = dot(r, r, cart.comm(), cg_metrics);
  const double r0 = std::sqrt(rr);
  result.cg_residuals.push_back(r0);
  OverlapTimes spmv;
  int it = 0;
  while (it < options.cg_iterations) {
    spmv += op.apply(p, q);
    const double alpha = rr / dot(p, q, cart.comm(), cg_metrics);
    {
      auto t = cg_metrics.time("cg_update", PhaseKind::computation);
      // Explicit fma: the same rounding whatever the compiler would contract.
      for_rows(x, [&](long o, long len) {
        for (long i = o; i < o + len; ++i) {
          px[i] = std::fma(alpha, pp[i], px[i]);
          pr[i] = std::fma(-alpha, pq[i], pr[i]);
        }
      });
    }
    const double rr_new = dot(r, r, cart.comm(), cg_metrics);
    ++it;
    result.cg_residuals.push_back(std::sqrt(rr_new));
    if (std::sqrt(rr_new) <= options.cg_tolerance * r0) {
      result.cg_converged = true;
      break;
    }
    const double beta = rr_new / rr;
    rr = rr_new;
    auto t = cg_metrics.time("cg_update", PhaseKind::computation);
    for_rows(p, [&](long o, long len) {
      for (long i = o; i < o + len; ++i) pp[i] = std::fma(beta, pp[i], pr[i]);
    });
  }
  const double elapsed = MPI_Wtime() - t0;
  cg_metrics.add("cg_halo", PhaseKind::communication, spmv.comm_s);
  cg_metrics.add("cg_spmv", PhaseKind::computation, spmv.comp_s);
  HYMPI_MPI(MPI_Allreduce(&elapsed, &result.cg_time_s, 1, MPI_DOUBLE, MPI_MAX, cart.comm()));
  result.cg_iterations = it;
  const double n_points = static_cast<double>(global[0] * global[1] * global[2]);
  // Per iteration: SpMV, two dots and three fused updates (2 flops per point each).
  result.cg_flops = it * (2.0 * result.nonzeros + 10.0 * n_points);

  double err = 0, peak = 0;
  {
    const auto n = x.extent();
#pragma omp parallel for collapse(2) schedule(static) reduction(max : err, peak)
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          err = std::max(err, std::abs(x(i, j, k) - xs(i, j, k)));
          peak = std::max(peak, std::abs(xs(i, j, k)));
        }
  }
  std::array<double, 2> mine{err, peak}, all{};
  HYMPI_MPI(MPI_Allreduce(mine.data(), all.data(), 2, MPI_DOUBLE, MPI_MAX, cart.comm()));
  result.cg_max_error = all[0] / all[1];
  return result;
}

}  // namespace hympi
