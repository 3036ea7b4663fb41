#pragma once
// HPCG's 27-point operator assembled as a CSR matrix on one rank's block.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "hympi/core/memory.hpp"
#include "hympi/grid/box.hpp"
#include "hympi/grid/grid3d.hpp"

namespace hympi {

/// The operator's rows for the owned points of one block, in owned-point order (x fastest);
/// column indexes address the ghosted storage of x (GridIndexing of the block), so a product
/// reads x where the halo exchange left it. Each row holds its in-grid neighbours in
/// (dz, dy, dx) order with -1, then the diagonal 26; a product sums a row in that order.
class Csr27 {
 public:
  /// 32 bits, as HPCG's local_int_t: 4 B per row less to read than 64-bit starts (about 1 % of a product's
  /// bytes), at the price of at most 2^31 - 1 nonzeros per rank (check_block).
  using RowStart = std::int32_t;
  /// Storage of one row at most: 27 values, 27 column indexes and its start, for memory estimates.
  static constexpr std::size_t kBytesPerPoint = 27 * sizeof(double) + 27 * sizeof(std::int32_t) + sizeof(RowStart);

  /// No rows.
  Csr27() = default;
  /// Assembles the rows of `block` (global indexes) of the `global` grid for vectors with
  /// `ghost` layers, first touched by the static row schedule of the products. Throws
  /// InvalidArgument as check_block does.
  Csr27(const Box3& block, const std::array<long, 3>& global, int ghost);

  /// Throws InvalidArgument naming the size when a block of `extent` points with `ghost`
  /// layers needs column indexes or row starts past 32 bits.
  static void check_block(const std::array<long, 3>& extent, int ghost);

  /// y = A x on the points of `box` (local coordinates) of vectors laid out as at assembly;
  /// never fails. Each row is one fma chain in storage order: the same bits for every box.
  /// `streaming` (where can_stream) writes y with non-temporal stores and fences after them.
  void apply(const double* x, double* y, const Box3& box, bool streaming) const;
  /// Whether apply can stream its stores in this build (x86-64); never fails.
  static bool can_stream() noexcept;
  /// Stored nonzeros; never fails.
  [[nodiscard]] std::size_t nonzeros() const noexcept { return nonzeros_; }
  /// Bytes of the matrix a product reads (values, column indexes, row starts); never fails.
  [[nodiscard]] double bytes() const noexcept;
  /// The matrix's storage (values, column indexes, row starts: empty without rows), e.g. to ask where
  /// its pages are or to time other row loops over it (bench/spmv); never fails.
  [[nodiscard]] std::array<std::span<const std::byte>, 3> storage() const noexcept;

 private:
  template <bool Streaming>
  void rows(const double* x, double* y, const Box3& box) const;

  std::array<long, 3> extent_{0, 0, 0};
  GridIndexing indexing_{{0, 0, 0}, 0, sizeof(double)};
  std::size_t nonzeros_ = 0;
  // Untouched arrays, not vectors: the assembly loop, not the allocation, must first-touch them; and on huge
  // pages where the kernel grants them (allocate_untouched), which made the product 1.15x [1.06, 1.24] as fast
  // on the Zen 4 VM, where a TLB miss walks the guest's and the host's page tables (docs/performance.md).
  UntouchedArray<RowStart> row_start_;
  UntouchedArray<std::int32_t> columns_;
  UntouchedArray<double> values_;
};

}  // namespace hympi
