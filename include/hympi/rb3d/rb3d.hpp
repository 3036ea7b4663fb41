#pragma once
// Red-black Gauss-Seidel (SOR) for the 3D Poisson equation on a Cartesian decomposition.
#include <mpi.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hympi/core/metrics.hpp"
#include "hympi/grid/overlap.hpp"
#include "hympi/h5/checkpoint.hpp"

namespace hympi {

/// Problem and solver options of rb3d.
///
/// Solves -lap(u) = f on the unit cube, u = 0 on the boundary, with nx*ny*nz interior points
/// (h = 1/(n+1) per axis) and f = 3 pi^2 sin(pi x) sin(pi y) sin(pi z), whose exact solution
/// is u = sin(pi x) sin(pi y) sin(pi z).
struct Rb3dOptions {
  std::array<long, 3> global{64, 64, 64};
  int iterations = 50;       ///< red+black sweeps (each needs two halo exchanges); the least with min_time_s
  /// Positive: keep iterating past `iterations` until the loop has lasted this many seconds (max
  /// over ranks); all ranks agree on the count, and a solve with iterations = the count done and
  /// min_time_s = 0 reproduces the same residual history.
  double min_time_s = 0.0;
  double omega = 1.0;        ///< 1 = Gauss-Seidel, (1,2) = over-relaxation
  int residual_every = 10;   ///< residual norm every this many iterations (and after the last)
  double tolerance = 0.0;    ///< stop early once residual/initial residual <= tolerance (0: never)
  std::array<int, 3> dims{0, 0, 0};  ///< process grid, 0 = chosen automatically
  OverlapOptions overlap{};          ///< halo/sweep overlap strategy and cache blocking
  /// Throws InvalidArgument naming the first bad value (sizes, iterations, min time, omega, strategy for
  /// `threads` OpenMP threads, ...).
  void validate(int ranks, int threads) const;
  /// validate(ranks, omp_get_max_threads()).
  void validate(int ranks) const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// What a solve produced.
struct Rb3dResult {
  std::vector<double> residuals;  ///< L2 residual norms, bitwise identical for every layout
  int iterations = 0;             ///< iterations done (fewer than asked if the tolerance was met), restart included
  int restarted_at = 0;           ///< iteration the run started from (a restart's checkpoint step, else 0)
  double time_s = 0;              ///< iteration loop wall time (max over ranks), residuals in it included
  double bytes = 0;               ///< compulsory traffic of the loop's sweeps, all ranks (kRb3dBytesPerPoint)
  double working_set_bytes = 0;   ///< u and f of the largest rank, ghosts included: what the sweeps touch
  double max_error = 0;           ///< max |u - u_exact| over the grid
  double discretisation_error = 0;  ///< what max_error converges to: the scheme's own error
  double flops = 0;               ///< floating-point operations of this run's sweeps
  OverlapTimes sweep_times;       ///< the sweeps with their halo exchanges, average over ranks
  int sweeps = 0;                 ///< colour sweeps this run did (2 per iteration after restarted_at)
  std::array<int, 3> dims{1, 1, 1};
};

/// The options a checkpoint's state records besides u and the residuals, each under its flag's name without
/// dashes: a restart with another --omega iterates another scheme, one with another --residual-every samples a
/// history that is no longer one run's. Never throws.
[[nodiscard]] nlohmann::json rb3d_restart_options(const Rb3dOptions& options);

/// Throws h5::BadFile naming `path` and the option when checkpoint state `state` recorded (rb3d_restart_options)
/// another value than `options` hold; a checkpoint of an older hympi, which recorded none, restarts as before.
void check_rb3d_restart_options(const std::string& path, const nlohmann::json& state, const Rb3dOptions& options);

/// Floating-point operations per grid point and sweep pair (GS: 7, SOR: 10).
double rb3d_flops_per_point(double omega);
/// Compulsory memory traffic per grid point and iteration: two colour passes, each reading u
/// and f and writing u (8 bytes each), so 48 bytes.
inline constexpr double kRb3dBytesPerPoint = 48.0;

/// Runs the solver on `comm` (collective); the phases of the timed loop go to `metrics` ("sweep",
/// "halo", "residual", "residual_halo"), the initial residual before the loop does not.
/// Every overlap strategy and tile size gives the same residuals bit for bit. With `io`, the solve starts
/// from its restart checkpoint (throws h5::BadFile for a bad one or one the session's header check refuses,
/// e.g. the app's step beyond --iterations), writes checkpoints and snapshots as due (throws h5::IoError) and ends bit for bit
/// where an uninterrupted solve would, whatever layout wrote the checkpoint.
Rb3dResult solve_rb3d(MPI_Comm comm, const Rb3dOptions& options, Metrics& metrics, h5::IoSession* io = nullptr);

/// rb3d's self-checks, as --verify names them.
inline constexpr const char* kRb3dVerifyModes[] = {"reference", "exact", "none"};

/// Whether `result` (a solve of `solved` on `comm`) passes the check `mode` (collective; the same
/// verdict on every rank): "reference" re-solves the whole problem on rank 0 alone (plain bulk,
/// untiled, the same iteration count) and demands the same residual history bit for bit; "exact"
/// demands max_error within 5 % of the scheme's discretisation error; "none" is never verified.
/// Throws InvalidArgument naming an unknown mode.
bool verify_rb3d(MPI_Comm comm, const Rb3dOptions& solved, const Rb3dResult& result, const std::string& mode);

}  // namespace hympi
