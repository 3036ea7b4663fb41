#pragma once
// One verified, timed run of the pencil solver, as hympi-pencil runs it (thin main: parse, run, print).
#include <mpi.h>

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hympi/core/metrics.hpp"
#include "hympi/h5/checkpoint.hpp"
#include "hympi/pencil/solver.hpp"

namespace hympi::pencil {

/// What the run checks: the error against the exact solution, or also the order over two grids.
enum class VerifyMode { solution, order };

/// The expected order of accuracy in x and y (the interior Pade rows; the third-order closures keep it).
inline constexpr double kExpectedOrder = 4.0;

/// A run: the solver's options, how many steps, how it verifies.
struct RunOptions {
  PencilOptions solver{};
  long steps = 10;          ///< steps to run (at least, when min_time_s asks for more)
  double min_time_s = 0.0;  ///< run more steps until the timed steps last this long (0: exactly `steps`)
  VerifyMode verify = VerifyMode::solution;
  double tolerance_scale = 1.0;  ///< multiplies error_bound (a test makes it wrong on purpose)
  /// {"steps","min_time_s","verify","tolerance_scale"} and the solver's options; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
  /// Throws InvalidArgument naming the value (steps < 1, a bad time or scale, PencilOptions::validate).
  void validate(int ranks) const;
};

/// One grid's verification.
struct GridCheck {
  std::array<long, 3> grid{};
  double h = 0;          ///< max(hx, hy)
  double t_end = 0;      ///< time reached
  long steps = 0;
  double error = 0;      ///< max |u - exact|
  double tolerance = 0;  ///< error_bound x tolerance_scale
  [[nodiscard]] bool passed() const noexcept { return error <= tolerance; }
  [[nodiscard]] nlohmann::json to_json() const;
};

/// What a run measured, reduced over its ranks.
struct RunResult {
  long steps = 0;          ///< steps done, those before a restart included
  long timed_steps = 0;    ///< steps this run did and timed (steps less the restart's)
  double time_s = 0;       ///< wall time of the timed steps without their checkpoints and snapshots, max over ranks
  SolverTimes times{};     ///< each part's max over ranks
  std::size_t plane_bytes = 0, pencil_bytes = 0;  ///< max over ranks
  nlohmann::json transpose;  ///< the options the transposes ran with (tile resolved)
  /// The transposes' pack, exchange and unpack seconds and bytes sent, each the max over ranks (count: per rank),
  /// so a bench can say which step grows with the rank count.
  transpose::TransposeTimes transpose_times{};
  GridCheck check{};
  /// The final state's fingerprint, state_hash() (both groups' when coupled): equal bit for bit on every layout,
  /// and after a restart equal to the uninterrupted run's.
  std::uint64_t state_hash = 0;
  std::optional<GridCheck> fine_check;  ///< VerifyMode::order: the grid with 2 nx x 2 ny points
  double observed_order = 0;
  /// passed(): every grid within its tolerance, and with order, observed >= kExpectedOrder - 0.5.
  [[nodiscard]] bool verified() const noexcept;
  /// {error, tolerance, t_end, steps, grid, ...} and with order {order, expected_order, grids}; never fails.
  [[nodiscard]] nlohmann::json verification_json() const;
};

/// Runs `options` on `comm` (collective): the timed steps on options.solver.grid, recorded in `metrics` as the
/// phases "transpose" (communication) and "compute" (computation), then the verification; with
/// VerifyMode::order also the grid with twice the points in x and y run to the same time (untimed), and the
/// observed order log(e1/e2) / log(h1/h2). With `io`: starts from its restart file if there is one, and writes
/// checkpoints and snapshots of the stepped grid at its cadence (pencil/io.hpp); the verification grid of
/// VerifyMode::order is run whole after the steps, never checkpointed. Throws InvalidArgument for bad options,
/// Error if the solution stops being finite, h5::BadFile / h5::IoError as restart_pencil / write_checkpoint,
/// MpiError.
[[nodiscard]] RunResult run_pencil(MPI_Comm comm, const RunOptions& options, Metrics& metrics,
                                   h5::IoSession* io = nullptr);

/// Called by run_steps after each complete step (checkpoints, snapshots); collective over run_steps' world.
using StepHook = std::function<void(const PencilSolver&)>;

/// Steps `solver` from its steps_done() to options.steps, and more until the steps last options.min_time_s,
/// decided over `world` (every rank that shares the time step must step as often), calling `after_step` (if
/// any) after each step; returns the wall time without the hook's, max over `world`. Throws as
/// PencilSolver::step and the hook.
double run_steps(PencilSolver& solver, const RunOptions& options, MPI_Comm world, const StepHook& after_step = {});

/// `solver`'s times ("transpose" and "compute" phases into `metrics`), memory and transpose options, reduced
/// (max) over `world`, into `r` (collective over world), and where the state's pages are (planes "u", pencils
/// "u_pencils", to metrics.observe_memory); throws MpiError and what the memory probe throws.
void measure(const PencilSolver& solver, MPI_Comm world, Metrics& metrics, RunResult& r);

/// `solver`'s error against the exact solution and its bound x tolerance_scale (collective over its ranks).
[[nodiscard]] GridCheck check_grid(const PencilSolver& solver, double tolerance_scale);

/// This rank's share of the state's fingerprint: the sum of h5::element_hash(global index zd + d (y + ny x), bits)
/// over its planes, so summing (modulo 2^64) over the ranks gives one value for any split; never fails.
[[nodiscard]] std::uint64_t local_state_hash(const PencilSolver& solver);
/// The sum of every rank's `value` modulo 2^64 over `comm` (collective); throws MpiError.
[[nodiscard]] std::uint64_t sum_over(MPI_Comm comm, std::uint64_t value);
/// A fingerprint as 16 hex digits, for the result line; never fails.
[[nodiscard]] std::string hash_text(std::uint64_t hash);

}  // namespace hympi::pencil
