#pragma once
// The CSR product's row loop, parameterised by its shape, so that the benchmark of its variants
// (bench/spmv) times the very code Csr27::apply runs, one instantiation apart.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>

#include "hympi/grid/box.hpp"
#include "hympi/grid/grid3d.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hympi::csr {

/// How the row loop walks the matrix. Every shape gives every row the same bits: one fma chain per
/// row in storage order.
struct Shape {
  /// Consecutive rows of equal length summed at once (independent chains the core overlaps); 1 = one at a time.
  long rows_at_once = 2;
  /// Groups of rows_at_once rows ahead that the matrix is prefetched; 0 = the hardware prefetcher alone.
  long prefetch_groups = 4;
  /// prefetchnta instead of prefetcht0: the hint that each line is read once.
  bool non_temporal_prefetch = false;
  /// Four rows as one vector chain: values, columns and x gathered (vgatherdpd); needs AVX2 + FMA
  /// and rows_at_once == 4, otherwise ignored.
  bool gather = false;
  /// Grid rows walked at once, each from its own half of the box's planes (2), or one (1): more streams of the
  /// matrix in flight per core (the values read as 2 or 4 streams ran 1.25-1.8x as fast as one), but two x
  /// neighbourhoods then share L2 with the matrix, and the product ran at 0.66-0.81 of one cursor (bench/spmv).
  int cursors = 1;
};

/// The shape Csr27::apply runs: 2 rows at once, prefetched 4 groups (the same 216 nonzeros) ahead. On the 2-core
/// Zen 3 VM it tied 4 rows 2 groups ahead, and none of 1-8 rows, 0-8 groups, prefetchnta, gathers or two cursors
/// beat either by more than the noise (2026-11-27); on the Zen 4 VM 4 rows were slower than every 1- and 2-row
/// shape, and this one 1.13-1.22x as fast, round by round (bench/spmv; docs/performance.md, 2026-11-30).
inline constexpr Shape kShape{};

/// Writes one value of y: with `Streaming`, past the caches, so y's line is not read for ownership first
/// (consecutive points fill whole lines in the write-combining buffers, but for the line a grid row's end
/// shares with the ghosts, which no product writes).
template <bool Streaming>
inline void store(double* p, double value) {
#if defined(__x86_64__)
  if constexpr (Streaming) {
    _mm_stream_si64(reinterpret_cast<long long*>(p), std::bit_cast<long long>(value));
    return;
  }
#endif
  *p = value;
}

/// Prefetches `bytes` from `p` on; `p` may lie past the matrix (a prefetch never faults).
template <bool NonTemporal>
inline void prefetch(std::uintptr_t p, std::int64_t bytes) {
  for (std::int64_t b = 0; b < bytes; b += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(p + b), 0, NonTemporal ? 0 : 3);
}

/// y of S.rows_at_once consecutive rows of `length` nonzeros each, stored back to back from `vals` / `cols`.
/// Each row is still one fma chain in storage order (the same bits as one row at a time), but the chains
/// are independent, so the core overlaps their latency instead of waiting out each row's 27 dependent
/// fmas. `length` is a run-time stride on purpose: with a constant one GCC packs the four chains into one
/// vector chain fed by scalar inserts, which ran slower than one row at a time.
template <Shape S, bool Streaming>
inline void equal_rows(const double* vals, const std::int32_t* cols, std::int64_t length, const double* x,
                       double* out) {
  constexpr long R = S.rows_at_once;
  if constexpr (S.prefetch_groups > 0) {
    const std::int64_t ahead = S.prefetch_groups * R * length;
    prefetch<S.non_temporal_prefetch>(reinterpret_cast<std::uintptr_t>(vals) + ahead * sizeof(double),
                                      R * length * sizeof(double));
    prefetch<S.non_temporal_prefetch>(reinterpret_cast<std::uintptr_t>(cols) + ahead * sizeof(std::int32_t),
                                      R * length * sizeof(std::int32_t));
  }
#if defined(__AVX2__) && defined(__FMA__)
  if constexpr (S.gather && R == 4) {
    // Lane q is row q's chain: vfmadd231pd rounds each lane once, as std::fma does.
    const int l = static_cast<int>(length);
    const __m128i stride = _mm_setr_epi32(0, l, 2 * l, 3 * l);
    // The masked forms with a zero source: the unmasked ones trip GCC 12's -Wmaybe-uninitialized.
    const __m256d zero = _mm256_setzero_pd(), all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
    const __m128i izero = _mm_setzero_si128(), iall = _mm_set1_epi32(-1);
    __m256d acc = zero;
    for (std::int64_t e = 0; e < length; ++e) {
      const __m128i c = _mm_mask_i32gather_epi32(izero, cols + e, stride, iall, 4);
      acc = _mm256_fmadd_pd(_mm256_mask_i32gather_pd(zero, vals + e, stride, all, 8),
                            _mm256_mask_i32gather_pd(zero, x, c, all, 8), acc);
    }
    alignas(32) double sums[4];
    _mm256_store_pd(sums, acc);
    for (long q = 0; q < 4; ++q) store<Streaming>(out + q, sums[q]);
    return;
  }
#endif
  double acc[R] = {};
  for (std::int64_t e = 0; e < length; ++e)
    for (long q = 0; q < R; ++q) acc[q] = std::fma(vals[q * length + e], x[cols[q * length + e]], acc[q]);
  for (long q = 0; q < R; ++q) store<Streaming>(out + q, acc[q]);
}

/// Sums the next group of S.rows_at_once equal rows, or the next row, of the grid row whose row starts are
/// `start` and whose y is `out`, from point `i` on (before `end`); returns the point after them.
template <Shape S, typename RowStart, bool Streaming>
inline long row_step(const RowStart* start, const std::int32_t* cols, const double* vals, const double* x, double* out,
                     long i, long end) {
  constexpr long R = S.rows_at_once;
  const std::int64_t first = start[i], length = start[i + 1] - first;
  if constexpr (R > 1) {
    bool equal = i + R <= end;
    for (long q = 2; equal && q <= R; ++q) equal = start[i + q] - start[i + q - 1] == length;
    if (equal) {
      equal_rows<S, Streaming>(vals + first, cols + first, length, x, out + i);
      return i + R;
    }
  }
  double acc = 0.0;
  // Explicit fma: the rounding must not depend on the compiler's contraction choices.
  for (std::int64_t e = first; e < first + length; ++e) acc = std::fma(vals[e], x[cols[e]], acc);
  store<Streaming>(out + i, acc);
  return i + 1;
}

/// y = A x on the points of `box` (local coordinates) for the CSR arrays of a block of `extent` points
/// (row starts per owned point, x fastest, then the end) and vectors laid out by `indexing`; never fails.
template <Shape S, typename RowStart, bool Streaming>
void rows(const RowStart* row_start, const std::int32_t* cols, const double* vals, const std::array<long, 3>& extent,
          const GridIndexing& indexing, const double* x, double* y, const Box3& box) {
  auto grid_row = [&](long j, long k) { return row_start + (k * extent[1] + j) * extent[0]; };
  if constexpr (S.cursors == 2) {
    // Planes lo + t and lo + half + t side by side; the second half has the odd plane, if any.
    const long lo = box.low[2], half = (box.high[2] - lo) / 2;
    for (long t = 0; t < box.high[2] - lo - half; ++t)
      for (long j = box.low[1]; j < box.high[1]; ++j) {
        const long ka = lo + t, kb = lo + half + t;
        const bool has_a = t < half;
        double* out_a = y + indexing.index(0, j, ka);
        double* out_b = y + indexing.index(0, j, kb);
        long ia = has_a ? box.low[0] : box.high[0], ib = box.low[0];
        while (ia < box.high[0] || ib < box.high[0]) {
          if (ia < box.high[0])
            ia = row_step<S, RowStart, Streaming>(grid_row(j, ka), cols, vals, x, out_a, ia, box.high[0]);
          if (ib < box.high[0])
            ib = row_step<S, RowStart, Streaming>(grid_row(j, kb), cols, vals, x, out_b, ib, box.high[0]);
        }
      }
  } else {
    for (long k = box.low[2]; k < box.high[2]; ++k)
      for (long j = box.low[1]; j < box.high[1]; ++j) {
        const RowStart* start = grid_row(j, k);
        double* out = y + indexing.index(0, j, k);
        for (long i = box.low[0]; i < box.high[0];)
          i = row_step<S, RowStart, Streaming>(start, cols, vals, x, out, i, box.high[0]);
      }
  }
}

}  // namespace hympi::csr
