// A timed, verified run of the pencil solver (set-up, stepping loop and reductions; no hot loop).
#include "hympi/pencil/run.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>
#include <vector>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/pencil/io.hpp"

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

double run_steps(PencilSolver& solver, const RunOptions& options, MPI_Comm world, const StepHook& after_step) {
  long target = options.steps;
  HYMPI_MPI(MPI_Barrier(world));
  const double start = MPI_Wtime();
  double hook_s = 0;  // checkpoints and snapshots: the I/O session times them, the steps' time leaves them out
  while (solver.steps_done() < target) {
    solver.step();
    if (after_step) {
      const double before = MPI_Wtime();
      after_step(solver);
      hook_s += MPI_Wtime() - before;
    }
    if (solver.steps_done() == target && options.min_time_s > 0) {
      const double elapsed = max_over(world, MPI_Wtime() - start - hook_s);
      target = repetitions_for_min_time(target, elapsed, options.min_time_s, kMaxSteps);
    }
  }
  return max_over(world, MPI_Wtime() - start - hook_s);
}

void measure(const PencilSolver& solver, MPI_Comm world, Metrics& metrics, RunResult& r) {
  r.steps = solver.steps_done();
  const SolverTimes local = solver.times();
  metrics.add("transpose", PhaseKind::communication, local.transpose_s);
  metrics.add("compute", PhaseKind::computation, local.compute_s);
  r.times = {max_over(world, local.compute_s), max_over(world, local.transpose_s),
             max_over(world, local.coupling_s)};
  r.plane_bytes = max_over(world, std::uint64_t{solver.plane_bytes()});
  r.pencil_bytes = max_over(world, std::uint64_t{solver.pencil_bytes()});
  r.transpose = solver.transpose().options().to_json();
  const transpose::TransposeTimes steps = solver.transpose().times();
  r.transpose_times = {.pack_s = max_over(world, steps.pack_s),
                       .exchange_s = max_over(world, steps.exchange_s),
                       .unpack_s = max_over(world, steps.unpack_s),
                       .bytes_sent = max_over(world, steps.bytes_sent),
                       .count = steps.count};
  // Touched since the start (the transposes' round trip): where did the pages go (--membind)?
  metrics.observe_memory("u", std::as_bytes(solver.state()));
  metrics.observe_memory("u_pencils", std::as_bytes(solver.pencils()));
}

std::uint64_t local_state_hash(const PencilSolver& solver) {
  const std::span<const double> u = solver.state();
  const auto first = static_cast<std::uint64_t>(solver.planes_x().begin * solver.options().grid[1] *
                                                solver.modes().doubles());
  std::uint64_t hash = 0;
  for (std::size_t i = 0; i < u.size(); ++i) hash += h5::element_hash(first + i, std::bit_cast<std::uint64_t>(u[i]));
  return hash;
}

std::uint64_t sum_over(MPI_Comm comm, std::uint64_t value) {
  std::uint64_t out = 0;
  HYMPI_MPI(MPI_Allreduce(&value, &out, 1, MPI_UINT64_T, MPI_SUM, comm));
  return out;
}

std::string hash_text(std::uint64_t hash) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string text(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4) text[static_cast<std::size_t>(i)] = kDigits[hash & 15];
  return text;
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
  if (verify == VerifyMode::order) {
    // The second, 2nx x 2ny grid of the order check must split over the same ranks.
    PencilOptions fine = solver;
    fine.grid[0] *= 2;
    fine.grid[1] *= 2;
    fine.validate(ranks);
  }
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

RunResult run_pencil(MPI_Comm comm, const RunOptions& options, Metrics& metrics, h5::IoSession* io) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  Standalone coupling(comm);
  PencilSolver solver(options.solver, comm, coupling);
  const std::vector<IoGrid> grids{{"", options.solver, true}};
  if (io != nullptr && io->restarting())
    restart_pencil(*io, grids, solver, options.steps);
  else
    solver.start(0.0);
  const long first = solver.steps_done();
  if (io != nullptr && io->snapshot_due(first)) write_snapshot(*io, grids, solver);  // the start, as rb3d does

  RunResult r;
  r.time_s = run_steps(solver, options, comm, io_hook(io, grids));
  measure(solver, comm, metrics, r);
  r.timed_steps = r.steps - first;
  r.check = check_grid(solver, options.tolerance_scale);
  r.state_hash = sum_over(comm, local_state_hash(solver));

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
