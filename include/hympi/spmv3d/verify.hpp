#pragma once
// spmv3d's verifier: the product checked exactly, CG's solution and residual history.
#include <mpi.h>

#include <string>

#include "hympi/grid/cart.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/spmv3d/options.hpp"
#include "hympi/spmv3d/spmv3d.hpp"

namespace hympi {

/// Largest CG error (relative to max |x*|) verification accepts.
inline constexpr double kSpmv3dErrorBound = 1e-6;

/// Fills owned points of x with x_id(p) = 1 + global linear index of p; never fails.
void spmv3d_fill_ids(const CartDecomposition& cart, Grid3D<double>& x);
/// y(p) - (26 x(p) - sum of x over p's in-grid neighbours), computed exactly in integers for
/// x = x_id (spmv3d_fill_ids); returns how many owned points differ over all ranks
/// (collective; throws MpiError).
long spmv3d_count_mismatches(const CartDecomposition& cart, const Grid3D<double>& y);

/// What the verification of one run found.
struct Spmv3dVerdict {
  bool product_exact = false;   ///< the timed product equals A x_id at every point
  bool cg_solved = false;       ///< CG (where it ran) converged to within kSpmv3dErrorBound of x*
  bool history_matches = true;  ///< CG's residuals equal the one-rank reference bit for bit (where compared)
  /// All of the above; never fails.
  [[nodiscard]] bool passed() const noexcept { return product_exact && cg_solved && history_matches; }
};

/// What failed, for the verification line: each failed check with the figure that failed it, "; "-separated
/// ("the product is wrong at 3 points; CG stopped after 5 iterations, not converged, error 0.68 > 1e-06");
/// empty when `verdict` passed. Never fails.
std::string spmv3d_failures(const Spmv3dVerdict& verdict, const Spmv3dResult& result);

/// Checks what run_spmv3d(comm, options, ...) returned: the product exact, CG converged to the
/// manufactured solution, and with `compare_history` CG's residual history equal bit for bit to
/// that of rank 0 solving the same global problem alone with the plain bulk sweep (exact dots
/// and pointwise updates make that history the one every layout must reproduce). Collective
/// over `comm`; throws MpiError, or InvalidArgument when `options` do not fit one rank.
Spmv3dVerdict verify_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, const Spmv3dResult& result,
                            bool compare_history);

}  // namespace hympi
