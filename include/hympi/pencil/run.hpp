#pragma once
// One verified, timed run of the pencil solver, as hympi-pencil runs it (thin main: parse, run, print).
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "hympi/core/metrics.hpp"
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
  long steps = 0;
  double time_s = 0;       ///< wall time of the timed steps, max over ranks
  SolverTimes times{};     ///< each part's max over ranks
  std::size_t plane_bytes = 0, pencil_bytes = 0;  ///< max over ranks
  nlohmann::json transpose;  ///< the options the transposes ran with (tile resolved)
  GridCheck check{};
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
/// observed order log(e1/e2) / log(h1/h2). Throws InvalidArgument for bad options, Error if the solution
/// stops being finite, MpiError.
[[nodiscard]] RunResult run_pencil(MPI_Comm comm, const RunOptions& options, Metrics& metrics);

/// Steps `solver` options.steps times, and more until the steps last options.min_time_s, decided over `world`
/// (every rank that shares the time step must step as often); returns the wall time, max over `world`.
/// Throws as PencilSolver::step.
double run_steps(PencilSolver& solver, const RunOptions& options, MPI_Comm world);

/// `solver`'s times ("transpose" and "compute" phases into `metrics`), memory and transpose options, reduced
/// (max) over `world`, into `r` (collective over world); throws MpiError.
void measure(const PencilSolver& solver, MPI_Comm world, Metrics& metrics, RunResult& r);

/// `solver`'s error against the exact solution and its bound x tolerance_scale (collective over its ranks).
[[nodiscard]] GridCheck check_grid(const PencilSolver& solver, double tolerance_scale);

/// The largest of every rank's `value` over `comm` (collective); throws MpiError.
[[nodiscard]] double max_over(MPI_Comm comm, double value);

}  // namespace hympi::pencil
