#include "hympi/spmv3d/csr.hpp"

#include <cstdint>
#include <limits>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/spmv3d/csr_kernel.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hympi {

namespace {
/// Number of in-grid points among {g-1, g, g+1} on an axis of n points.
long span3(long g, long n) { return 1 + (g > 0 ? 1 : 0) + (g < n - 1 ? 1 : 0); }
}  // namespace

void Csr27::check_block(const std::array<long, 3>& extent, int ghost) {
  const GridIndexing indexing(extent, ghost, sizeof(double));
  if (indexing.size >= static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw InvalidArgument("local block of " + std::to_string(indexing.size) +
                          " points is too large for 32-bit CSR column indexes");
  // At most 27 nonzeros per row: the bound, not the count, so that the check needs no assembly.
  const double points = static_cast<double>(extent[0]) * static_cast<double>(extent[1]) * static_cast<double>(extent[2]);
  if (27.0 * points > static_cast<double>(std::numeric_limits<RowStart>::max()))
    throw InvalidArgument("local block of " + std::to_string(extent[0]) + "x" + std::to_string(extent[1]) + "x" +
                          std::to_string(extent[2]) + " points may hold more nonzeros than 32-bit CSR row starts "
                          "address (27 per point, at most 2^31 - 1 per rank): use more ranks");
}

Csr27::Csr27(const Box3& block, const std::array<long, 3>& global, int ghost)
    : extent_(block.size()), indexing_(extent_, ghost, sizeof(double)) {
  check_block(extent_, ghost);
  const auto& n = extent_;
  const long rows = n[0] * n[1] * n[2];
  // Row lengths are known in closed form, so the prefix sum needs no pass over the matrix.
  row_start_ = make_untouched_array<RowStart>(static_cast<std::size_t>(rows + 1));
  std::int64_t offset = 0;
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j) {
      const long cyz = span3(block.low[1] + j, global[1]) * span3(block.low[2] + k, global[2]);
      for (long i = 0; i < n[0]; ++i) {
        row_start_[static_cast<std::size_t>((k * n[1] + j) * n[0] + i)] = static_cast<RowStart>(offset);
        offset += cyz * span3(block.low[0] + i, global[0]);
      }
    }
  row_start_[static_cast<std::size_t>(rows)] = static_cast<RowStart>(offset);
  nonzeros_ = static_cast<std::size_t>(offset);
  columns_ = make_untouched_array<std::int32_t>(nonzeros_);
  values_ = make_untouched_array<double>(nonzeros_);
  const GridIndexing& indexing = indexing_;
  const RowStart* start = row_start_.get();
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
              const long gi = block.low[0] + i + dx, gj = block.low[1] + j + dy, gk = block.low[2] + k + dz;
              if (gi < 0 || gi >= global[0] || gj < 0 || gj >= global[1] || gk < 0 || gk >= global[2]) continue;
              cols[e] = static_cast<std::int32_t>(indexing.index(i + dx, j + dy, k + dz));
              vals[e] = -1.0;
              ++e;
            }
        cols[e] = static_cast<std::int32_t>(indexing.index(i, j, k));
        vals[e] = 26.0;
      }
}

double Csr27::bytes() const noexcept {
  const double rows = static_cast<double>(extent_[0] * extent_[1] * extent_[2]);
  return static_cast<double>(nonzeros_) * (sizeof(double) + sizeof(std::int32_t)) + (rows + 1) * sizeof(RowStart);
}

std::array<std::span<const std::byte>, 3> Csr27::storage() const noexcept {
  if (!row_start_) return {};
  const auto rows = static_cast<std::size_t>(extent_[0] * extent_[1] * extent_[2]);
  return {std::as_bytes(std::span<const double>(values_.get(), nonzeros_)),
          std::as_bytes(std::span<const std::int32_t>(columns_.get(), nonzeros_)),
          std::as_bytes(std::span<const RowStart>(row_start_.get(), rows + 1))};
}

bool Csr27::can_stream() noexcept {
#if defined(__x86_64__)
  return true;
#else
  return false;
#endif
}

void Csr27::apply(const double* x, double* y, const Box3& box, bool streaming) const {
  if (streaming && can_stream()) {
    rows<true>(x, y, box);
    // Streamed stores are weakly ordered: fence before another thread may read y.
#if defined(__x86_64__)
    _mm_sfence();
#endif
  } else {
    rows<false>(x, y, box);
  }
}

template <bool Streaming>
void Csr27::rows(const double* x, double* y, const Box3& box) const {
  csr::rows<csr::kShape, RowStart, Streaming>(row_start_.get(), columns_.get(), values_.get(), extent_, indexing_, x, y,
                                              box);
}

}  // namespace hympi
