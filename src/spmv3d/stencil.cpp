#include "hympi/spmv3d/stencil.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>

// The stencil's row kernels are vectorised by hand for AVX-512 and for AVX2 + FMA (lane shifts
// and masked loads that compilers do not generate from the scalar loop); other targets run that loop.
#if defined(__AVX512F__) || (defined(__AVX2__) && defined(__FMA__))
#include <immintrin.h>
#define HYMPI_SPMV_SIMD 1
#endif

namespace hympi {

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

void stencil27_apply(const double* x, double* y, const GridIndexing& indexing, const Box3& box, bool streaming) {
  const long sy = indexing.stride_y, sz = indexing.stride_z;
  const long len = box.high[0] - box.low[0];
  for (long k = box.low[2]; k < box.high[2]; k += 2)
    for (long j = box.low[1]; j < box.high[1]; ++j) {
      const long c = indexing.index(box.low[0], j, k);
      if (k + 1 < box.high[2]) {
        stencil27_row_pair(x + c, sy, sz, y + c, len, streaming);
      } else {
        stencil27_row(rows_around(x + c, sy, sz).data(), y + c, len, streaming);
      }
    }
#ifdef HYMPI_SPMV_SIMD
  // Streamed stores are weakly ordered: fence before another thread may read y.
  if (streaming) _mm_sfence();
#endif
}

bool stencil27_can_stream() noexcept {
#ifdef HYMPI_SPMV_SIMD
  return true;
#else
  return false;  // no vector kernel: plain stores
#endif
}

}  // namespace hympi
