#pragma once
// spmv3d's driver: repeated SpMV and CG with HPCG's 27-point operator (stencil or CSR).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <vector>

#include "hympi/core/metrics.hpp"
#include "hympi/grid/overlap.hpp"
#include "hympi/h5/checkpoint.hpp"
#include "hympi/spmv3d/operator.hpp"
#include "hympi/spmv3d/options.hpp"

namespace hympi {

/// What a run produced.
struct Spmv3dResult {
  std::array<long, 3> global{};
  std::array<int, 3> dims{1, 1, 1};
  double nonzeros = 0;
  bool streaming_stores = false;
  // Repeated SpMV.
  int spmv_reps = 0;           ///< products timed (spmv_reps of the options, or more to reach min_time_s)
  double spmv_time_s = 0;      ///< all reps, max over ranks
  OverlapTimes spmv_times;     ///< all reps, average over ranks
  double spmv_flops = 0;       ///< 2 * nonzeros * reps (HPCG's count: one multiply and one add per nonzero)
  double spmv_bytes = 0;       ///< bytes moved by all reps, all ranks (Operator27::bytes_per_apply)
  double spmv_working_set_bytes = 0;  ///< x, y and the CSR matrix of the largest rank: what a product touches
  long spmv_mismatches = -1;   ///< owned points where y != A x_id exactly (0 = correct)
  // CG.
  std::vector<double> cg_residuals;  ///< ||r_k||, bitwise identical for every layout and strategy
  int cg_iterations = 0;       ///< iterations done, those before a restart included
  int cg_timed_iterations = 0;  ///< iterations this run did (cg_iterations less the restart's)
  bool cg_converged = false;
  double cg_time_s = 0;       ///< max over ranks, the timed iterations without their checkpoints and snapshots
  double cg_max_error = 0;    ///< max |x - x*| / max |x*|
  /// The solution's fingerprint: sum over points of h5::element_hash(global index, bits of x) modulo 2^64, equal
  /// for every layout and, after a restart, to the uninterrupted solve's.
  std::uint64_t cg_x_hash = 0;
  double cg_flops = 0;         ///< of the timed iterations
};

/// Runs repeated SpMV and CG on `comm` (collective): the phases of the timed products go to
/// `spmv_metrics` ("spmv_halo", "spmv_compute"), those of the timed CG loop to `cg_metrics`
/// ("cg_halo", "cg_spmv", "cg_dot", "cg_allreduce", "cg_update"). Once touched, the products' vectors
/// and matrix go to spmv_metrics.observe_memory ("x", "y", "A": CSR only), CG's vectors to
/// cg_metrics.observe_memory ("cg_x", "cg_r", "cg_p", "cg_q"). With `io`, CG starts from the
/// restart file if there is one and writes checkpoints (x, r, p, rr, the residual history) and
/// snapshots (x) at its cadence, counted in CG iterations; a restarted solve ends bit for bit as the
/// uninterrupted one, on any layout. Throws InvalidArgument for options that do not validate on this
/// communicator, h5::BadFile for a restart file that is not this solve's (or that
/// the session's header check refuses: the app's, a step past --cg-iterations), h5::IoError for a failed write or read, MpiError for a failed MPI call.
Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& spmv_metrics, Metrics& cg_metrics,
                        h5::IoSession* io = nullptr);
/// run_spmv3d with both regions' phases in one `metrics`; throws as that does.
Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& metrics);

}  // namespace hympi
