#include "hympi/blades/run.hpp"

#include <omp.h>

#include <cmath>
#include <string>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"

namespace hympi::blades {

namespace {

// Enough for any --min-time on any machine, small enough that a runaway estimate cannot run for days.
constexpr long kMaxIterations = 10'000'000;

}  // namespace

void RunOptions::validate(int ranks, int threads) const {
  problem.validate();
  (void)resolve_levels(problem, inner, ranks, threads, n2);
  if (iterations < 1) throw InvalidArgument("--iterations must be >= 1, got " + std::to_string(iterations));
  if (!std::isfinite(min_time_s) || min_time_s < 0)
    throw InvalidArgument("minimum time must be >= 0 seconds, got " + std::to_string(min_time_s));
  if (!std::isfinite(tolerance_scale) || !(tolerance_scale > 0))
    throw InvalidArgument("--tolerance-scale must be > 0, got " + std::to_string(tolerance_scale));
}

nlohmann::json RunOptions::to_json() const {
  return {{"blades", problem.blades},         {"grid", problem.grid},     {"offset", problem.offset},
          {"inner", to_string(inner)},         {"n2", n2},                 {"iterations", iterations},
          {"min_time_s", min_time_s},          {"tolerance_scale", tolerance_scale},
          {"verify", verify_bitwise ? "bitwise" : "manufactured"}};
}

RunResult run_blades(MPI_Comm world, const RunOptions& options, Metrics& metrics) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(world, &ranks));
  const int threads = omp_get_max_threads();
  options.validate(ranks, threads);
  RunResult r;
  r.levels = resolve_levels(options.problem, options.inner, ranks, threads, options.n2);
  BladeRowSolver solver(world, options.problem, r.levels.ranks_per_group);
  for (const auto& array : solver.state_arrays()) metrics.observe_memory("state", std::as_bytes(array));

  PhaseSeconds seconds;
  long target = options.iterations;
  HYMPI_MPI(MPI_Barrier(world));
  const double start = MPI_Wtime();
  while (solver.steps() < target) {
    solver.step(seconds);
    if (solver.steps() == target && options.min_time_s > 0) {
      // Every rank takes the slowest rank's time, so all agree on the new target.
      const double elapsed = max_over(world, MPI_Wtime() - start);
      target = repetitions_for_min_time(target, elapsed, options.min_time_s, kMaxIterations);
    }
  }
  r.time_s = max_over(world, MPI_Wtime() - start);
  r.iterations = solver.steps();
  metrics.add("comp", PhaseKind::computation, seconds.comp);
  metrics.add("group_halo", PhaseKind::communication, seconds.group_halo);
  metrics.add("blade_exchange", PhaseKind::communication, seconds.blade_exchange);
  r.phases_max = {max_over(world, seconds.comp), max_over(world, seconds.group_halo),
                  max_over(world, seconds.blade_exchange)};
  r.group_halo_bytes = max_over(world, solver.group_halo_bytes());
  r.blade_exchange_bytes = max_over(world, solver.blade_exchange_bytes());
  r.state_bytes_max = max_over(world, solver.state_bytes());

  r.checksum = solver.checksum();
  r.error = solver.max_error();
  r.tolerance = solver.manufactured().error_bound(r.iterations) * options.tolerance_scale;
  if (options.verify_bitwise) {
    // The one-rank run of the same iterations: the reference every layout must equal bit for bit.
    std::uint64_t reference = 0;
    r.bitwise_match = decide_on_root(world, [&] {
      BladeRowSolver serial(MPI_COMM_SELF, options.problem, 1);
      PhaseSeconds ignored;
      while (serial.steps() < r.iterations) serial.step(ignored);
      reference = serial.checksum();
      return reference == r.checksum;
    });
    int rank = 0;
    HYMPI_MPI(MPI_Comm_rank(world, &rank));
    if (rank == 0) r.reference_checksum = reference;
  }
  return r;
}

}  // namespace hympi::blades
