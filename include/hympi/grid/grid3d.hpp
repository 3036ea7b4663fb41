#pragma once
// A rank's block of a global 3D grid, with ghost layers, first-touch allocated.
#include <array>
#include <cstddef>
#include <span>

#include "hympi/grid/box.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/memory.hpp"

namespace hympi {

/// How the points of a block with ghost layers map to indexes of its storage. Every row's first
/// owned point starts a 64-byte cache line: rows are padded to whole lines and `lead` elements
/// precede the grid, so vector kernels load rows aligned and can stream them with aligned stores.
/// Code that precomputes addresses (CSR column indexes) uses the same indexing as Grid3D.
struct GridIndexing {
  static constexpr std::size_t kLineBytes = kCacheLineBytes;
  /// Indexing of `extent` owned points per axis with `ghost` layers of `element_bytes` elements.
  GridIndexing(const std::array<long, 3>& extent, int ghost_layers, std::size_t element_bytes) : ghost(ghost_layers) {
    const long line = kLineBytes % element_bytes == 0 ? static_cast<long>(kLineBytes / element_bytes) : 1;
    for (int d = 0; d < 3; ++d) padded[d] = extent[d] + 2L * ghost;
    stride_y = (padded[0] + line - 1) / line * line;
    stride_z = stride_y * padded[1];
    lead = (line - ghost % line) % line;
    size = static_cast<std::size_t>(lead + stride_z * padded[2]);
  }
  /// Linear index of local point (i, j, k), -ghost <= i, j, k < extent + ghost.
  [[nodiscard]] long index(long i, long j, long k) const {
    return lead + (i + ghost) + stride_y * (j + ghost) + stride_z * (k + ghost);
  }
  int ghost;
  std::array<long, 3> padded{};  ///< points per axis including ghosts
  long stride_y = 0, stride_z = 0, lead = 0;
  std::size_t size = 0;  ///< elements of storage
};

/// Local block of a global grid plus `ghost` layers on every side; x is the fastest axis.
///
/// Local coordinates run from -ghost to extent+ghost-1; (0,0,0) is the first owned point.
/// Memory is first touched plane by plane with the static schedule the kernels use, so on a
/// NUMA node each thread's planes live in its own domain.
template <class T>
class Grid3D {
  static_assert(GridIndexing::kLineBytes <= kUntouchedAlignment, "rows are aligned relative to the storage");

 public:
  /// Allocates the block `box` (global indexes) with `ghost` layers; throws InvalidArgument
  /// for an empty box or a negative ghost width.
  Grid3D(const Box3& box, int ghost)
      : box_(box), indexing_(checked_indexing(box, ghost)), data_(make_untouched_array<T>(indexing_.size)) {
    T* p = data_.get();
    for (long i = 0; i < indexing_.lead; ++i) p[i] = T{};
    p += indexing_.lead;
    const long planes = indexing_.padded[2];
    const long plane = indexing_.stride_z;
#pragma omp parallel for schedule(static)
    for (long k = 0; k < planes; ++k)
      for (long i = 0; i < plane; ++i) p[k * plane + i] = T{};
  }

  /// Owned points per axis.
  [[nodiscard]] std::array<long, 3> extent() const { return box_.size(); }
  /// Points per axis including ghosts (strides may be larger: rows are padded).
  [[nodiscard]] const std::array<long, 3>& padded() const { return indexing_.padded; }
  [[nodiscard]] const Box3& box() const { return box_; }
  [[nodiscard]] int ghost() const { return indexing_.ghost; }
  [[nodiscard]] long stride_y() const { return indexing_.stride_y; }
  [[nodiscard]] long stride_z() const { return indexing_.stride_z; }
  [[nodiscard]] const GridIndexing& indexing() const { return indexing_; }
  /// Linear index of local point (i, j, k).
  [[nodiscard]] long index(long i, long j, long k) const { return indexing_.index(i, j, k); }
  T& operator()(long i, long j, long k) { return data_[static_cast<std::size_t>(index(i, j, k))]; }
  const T& operator()(long i, long j, long k) const { return data_[static_cast<std::size_t>(index(i, j, k))]; }
  /// Global index of local coordinate `local` on axis d.
  [[nodiscard]] long global(int d, long local) const { return box_.low[static_cast<std::size_t>(d)] + local; }
  /// All storage, ghosts and row padding included (address points with index()).
  [[nodiscard]] std::span<T> data() { return {data_.get(), indexing_.size}; }
  [[nodiscard]] std::span<const T> data() const { return {data_.get(), indexing_.size}; }

 private:
  static GridIndexing checked_indexing(const Box3& box, int ghost) {
    if (box.empty()) throw InvalidArgument("grid block is empty");
    if (ghost < 0) throw InvalidArgument("ghost width must be >= 0, got " + std::to_string(ghost));
    return GridIndexing(box.size(), ghost, sizeof(T));
  }
  Box3 box_;
  GridIndexing indexing_;
  UntouchedArray<T> data_;
};

}  // namespace hympi
