#pragma once
// HPCG's 27-point operator on one rank's block, applied through an OverlapDriver.
#include <array>
#include <cstddef>

#include "hympi/grid/cart.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/grid/overlap.hpp"
#include "hympi/spmv3d/csr.hpp"
#include "hympi/spmv3d/options.hpp"

namespace hympi {

/// Nonzeros of the operator on a global grid: prod over axes of (3 n - 2); never fails.
double spmv3d_nonzeros(const std::array<long, 3>& global);

/// The operator on one rank's block, applied through an OverlapDriver.
class Operator27 {
 public:
  /// Builds the operator for the blocks of `cart` (assembling the CSR matrix if asked); throws
  /// InvalidArgument for overlap options or a block the CSR indexes cannot address.
  Operator27(const CartDecomposition& cart, const Spmv3dOptions& options);
  /// y = A x on owned points; exchanges the ghosts of x first (collective); throws MpiError.
  OverlapTimes apply(Grid3D<double>& x, Grid3D<double>& y);
  /// A grid shaped like the operator's vectors (ghosts included), zero-filled, first touched.
  [[nodiscard]] Grid3D<double> make_vector() const { return Grid3D<double>(cart_.local_box(), ghost_); }
  /// The decomposition the operator was built for.
  [[nodiscard]] const CartDecomposition& cart() const noexcept { return cart_; }
  /// The halo/compute driver (strategy, work plan).
  [[nodiscard]] const OverlapDriver& driver() const noexcept { return driver_; }
  /// Locally stored nonzeros (CSR), 0 for the stencil.
  [[nodiscard]] std::size_t stored_nonzeros() const noexcept { return csr_.nonzeros(); }
  /// The assembled matrix (no rows for the stencil).
  [[nodiscard]] const Csr27& csr() const noexcept { return csr_; }
  /// Bytes one product moves through memory on this rank: the matrix, x over the points it reads, y written
  /// and, unless streamed, read for ownership (operator.cpp says why each); never fails.
  [[nodiscard]] double bytes_per_apply() const;
  /// Whether the product writes y with non-temporal stores.
  [[nodiscard]] bool streaming_stores() const noexcept { return streaming_; }

 private:
  const CartDecomposition& cart_;
  int ghost_;
  SpmvOperator op_;
  OverlapDriver driver_;
  bool streaming_ = false;
  Csr27 csr_;  ///< no rows for the stencil
};

}  // namespace hympi
