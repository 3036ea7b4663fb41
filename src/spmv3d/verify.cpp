#include "hympi/spmv3d/verify.hpp"

#include <iomanip>
#include <sstream>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/metrics.hpp"

namespace hympi {

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

std::string spmv3d_failures(const Spmv3dVerdict& verdict, const Spmv3dResult& result) {
  std::ostringstream out;
  out << std::setprecision(3);
  const char* sep = "";
  if (!verdict.product_exact) {
    out << "the product is wrong at " << result.spmv_mismatches << (result.spmv_mismatches == 1 ? " point" : " points");
    sep = "; ";
  }
  if (!verdict.cg_solved) {
    out << sep << "CG stopped after " << result.cg_iterations << " iterations, "
        << (result.cg_converged ? "converged" : "not converged") << ", error " << result.cg_max_error
        << (result.cg_max_error <= kSpmv3dErrorBound ? " <= " : " > ") << kSpmv3dErrorBound;
    sep = "; ";
  }
  if (!verdict.history_matches) out << sep << "CG's residual history differs from the one-rank solve's";
  return out.str();
}

Spmv3dVerdict verify_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, const Spmv3dResult& result,
                            bool compare_history) {
  Spmv3dVerdict verdict;
  verdict.product_exact = result.spmv_mismatches == 0;
  const bool cg = options.cg_iterations > 0;
  verdict.cg_solved = !cg || (result.cg_converged && result.cg_max_error <= kSpmv3dErrorBound);
  if (!compare_history || !cg) return verdict;
  verdict.history_matches = decide_on_root(comm, [&] {
    Metrics scratch;
    auto reference = options;
    reference.global = result.global;
    reference.per_rank = {0, 0, 0};
    reference.dims = {0, 0, 0};
    reference.ghost = 1;
    reference.overlap = {};
    reference.spmv_reps = 1;
    reference.min_time_s = 0.0;
    return run_spmv3d(MPI_COMM_SELF, reference, scratch).cg_residuals == result.cg_residuals;
  });
  return verdict;
}

}  // namespace hympi
