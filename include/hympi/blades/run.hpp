#pragma once
// One verified, timed run of the blade row, as hympi-blades runs it (thin main: parse, run, print).
#include <mpi.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "hympi/blades/problem.hpp"
#include "hympi/blades/solver.hpp"
#include "hympi/core/metrics.hpp"

namespace hympi::blades {

/// A run: the problem, how level 2 is parallelised, how long, how it verifies.
struct RunOptions {
  Problem problem{};
  InnerMode inner = InnerMode::openmp;
  int n2 = 1;                    ///< ranks per group with --inner mpi (openmp: must be 1 or the thread count)
  long iterations = 100;         ///< at least this many (more when min_time_s asks for them)
  double min_time_s = 0.0;       ///< iterate until the timed iterations last this long (0: exactly `iterations`)
  double tolerance_scale = 1.0;  ///< multiplies the error bound (a test makes it wrong on purpose)
  bool verify_bitwise = false;   ///< also re-run the problem on one rank and compare the checksums
  /// Throws InvalidArgument naming the bad value (Problem::validate, resolve_levels for ranks x threads,
  /// iterations < 1, a bad minimum time or tolerance scale).
  void validate(int ranks, int threads) const;
  /// Every option as JSON; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// What a run measured and checked, reduced over the ranks.
struct RunResult {
  Levels levels{};
  long iterations = 0;
  double time_s = 0;  ///< wall time of the iterations, max over ranks
  PhaseSeconds phases_max{};  ///< each phase's sum over this run's iterations, max over ranks
  std::size_t group_halo_bytes = 0, blade_exchange_bytes = 0;  ///< sent per iteration, max over ranks
  std::size_t state_bytes_max = 0;  ///< state arrays of the largest rank
  std::uint64_t checksum = 0;
  double error = 0;      ///< max |u - exact|
  double tolerance = 0;  ///< error bound x tolerance scale
  std::optional<std::uint64_t> reference_checksum;  ///< the one-rank run's (with verify_bitwise, rank 0 only)
  std::optional<bool> bitwise_match;                ///< the checksums agree (with verify_bitwise, every rank)
  /// The error is within the tolerance and, when checked, the state equals the one-rank run's bit for bit.
  [[nodiscard]] bool verified() const noexcept {
    return error <= tolerance && bitwise_match.value_or(true);
  }
};

/// Runs `options` on the ranks of `world` (collective), adding phases comp (computation), group_halo and
/// blade_exchange (communication) to `metrics`. Throws InvalidArgument for options the layout cannot run
/// (RunOptions::validate), MpiError when MPI fails.
[[nodiscard]] RunResult run_blades(MPI_Comm world, const RunOptions& options, Metrics& metrics);

}  // namespace hympi::blades
