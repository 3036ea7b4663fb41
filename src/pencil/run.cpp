// A timed, verified run of the pencil solver (set-up, stepping loop and reductions; no hot loop).
#include "hympi/pencil/run.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi::pencil {

namespace {

constexpr long kMaxSteps = 1000000;

}  // namespace

GridCheck check_grid(const PencilSolver& solver, double tolerance_scale) {
  GridCheck c;
  c.grid = solver.options().grid;
  c.h = std::max(solver.hx(), solver.hy());
  c.t_end = solver.time();
  c.steps = solver.steps_done();
  c.error = solver.max_error();
  c.tolerance = tolerance_scale * error_bound(solver.options(), c.t_end, c.steps);
  return c;
}

double run_steps(PencilSolver& solver, const RunOptions& options, MPI_Comm world) {
  long target = options.steps;
  HYMPI_MPI(MPI_Barrier(world));
  const double start = MPI_Wtime();
  while (solver.steps_done() < target) {
    solver.step();
    if (solver.steps_done() == target && options.min_time_s > 0) {
      const double elapsed = max_over(world, MPI_Wtime() - start);
      target = repetitions_for_min_time(target, elapsed, options.min_time_s, kMaxSteps);
    }
  }
  return max_over(world, MPI_Wtime() - start);
}

void measure(const PencilSolver& solver, MPI_Comm world, Metrics& metrics, RunResult& r) {
  r.steps = solver.steps_done();
  const SolverTimes local = solver.times();
  metrics.add("transpose", PhaseKind::communication, local.transpose_s);
  metrics.add("compute", PhaseKind::computation, local.compute_s);
  r.times = {max_over(world, local.compute_s), max_over(world, local.transpose_s),
             max_over(world, local.coupling_s)};
  r.plane_bytes = static_cast<std::size_t>(max_over(world, static_cast<double>(solver.plane_bytes())));
  r.pencil_bytes = static_cast<std::size_t>(max_over(world, static_cast<double>(solver.pencil_bytes())));
  r.transpose = solver.transpose().options().to_json();
}

double max_over(MPI_Comm comm, double value) {
  double out = 0;
  HYMPI_MPI(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, comm));
  return out;
}

nlohmann::json RunOptions::to_json() const {
  return {{"steps", steps},
          {"min_time_s", min_time_s},
          {"verify", verify == VerifyMode::order ? "order" : "solution"},
          {"tolerance_scale", tolerance_scale},
          {"solver", solver.to_json()}};
}

void RunOptions::validate(int ranks) const {
  if (steps < 1) throw InvalidArgument("steps must be >= 1, got " + std::to_string(steps));
  if (!(min_time_s >= 0) || !std::isfinite(min_time_s))
    throw InvalidArgument("minimum time must be >= 0 seconds, got " + std::to_string(min_time_s));
  if (!(tolerance_scale > 0) || !std::isfinite(tolerance_scale))
    throw InvalidArgument("tolerance scale must be > 0, got " + std::to_string(tolerance_scale));
  solver.validate(ranks);
}

nlohmann::json GridCheck::to_json() const {
  return {{"grid", grid}, {"h", h},         {"t_end", t_end},          {"steps", steps},
          {"error", error}, {"tolerance", tolerance}, {"passed", passed()}};
}

bool RunResult::verified() const noexcept {
  if (!check.passed()) return false;
  if (!fine_check) return true;
  return fine_check->passed() && observed_order >= kExpectedOrder - 0.5;
}

nlohmann::json RunResult::verification_json() const {
  nlohmann::json j = check.to_json();
  j["passed"] = verified();
  if (fine_check) {
    j["order"] = observed_order;
    j["expected_order"] = kExpectedOrder;
    j["grids"] = {check.to_json(), fine_check->to_json()};
  }
  return j;
}

RunResult run_pencil(MPI_Comm comm, const RunOptions& options, Metrics& metrics) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  Standalone coupling(comm);
  PencilSolver solver(options.solver, comm, coupling);
  solver.start(0.0);

  RunResult r;
  r.time_s = run_steps(solver, options, comm);
  measure(solver, comm, metrics, r);
  r.check = check_grid(solver, options.tolerance_scale);

  if (options.verify == VerifyMode::order) {
    RunOptions fine = options;
    fine.solver.grid[0] = 2 * options.solver.grid[0];
    fine.solver.grid[1] = 2 * options.solver.grid[1];
    PencilSolver second(fine.solver, comm, coupling);
    second.start(0.0);
    while (second.time() < solver.time()) second.step(solver.time());
    r.fine_check = check_grid(second, options.tolerance_scale);
    r.observed_order = std::log(r.check.error / r.fine_check->error) / std::log(r.check.h / r.fine_check->h);
  }
  return r;
}

}  // namespace hympi::pencil
