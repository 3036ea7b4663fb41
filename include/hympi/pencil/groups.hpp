#pragma once
// Two coupled MPI groups (issue 16; the two boundary layers of Sillero et al., "Hybrid OpenMP-MPI turbulent
// boundary layer code over 32k cores", §2.1): a coarse auxiliary simulation feeds the
// main fine one its inflow plane every substep over the world communicator, and both agree on the time step
// by an Allreduce over the world; each group's idle time at these two global operations is measured, and the
// split of the ranks can be chosen by a short measured warm-up.
#include <mpi.h>

#include <array>
#include <nlohmann/json.hpp>
#include <string_view>
#include <vector>

#include "hympi/core/metrics.hpp"
#include "hympi/pencil/run.hpp"
#include "hympi/pencil/solver.hpp"

namespace hympi::pencil {

/// How the world's ranks split into the groups: world ranks [0, coarse) run the coarse simulation, the next
/// `fine` the main one; `automatic`: chosen by choose_split.
struct GroupSplit {
  int coarse = 0, fine = 0;
  bool automatic = false;
};

/// "C:F" with C, F >= 1, or "auto" (sizes 0 until chosen). Throws InvalidArgument naming the text for an empty
/// group, more than two groups, or anything else.
[[nodiscard]] GroupSplit parse_group_split(std::string_view text);

/// The two problems of a coupled run.
struct CoupledProblems {
  PencilOptions coarse;   ///< half the main grid's points in each direction (x, y >= 6, nz even >= kMinNz)
  PencilOptions fine;     ///< the main grid, on x in [coarse x of `inflow_plane`, + lx]
  long inflow_plane = 0;  ///< coarse x index of the fine domain's inflow (the coarse domain's middle plane)
};

/// The coarse auxiliary problem of `main` and the fine one it feeds; never fails.
[[nodiscard]] CoupledProblems coupled_problems(const PencilOptions& main);

/// Throws InvalidArgument naming the value when the split's sizes do not add up to `ranks`, a group is empty, or
/// a group's grid cannot be split over its ranks (PencilOptions::validate); automatic: when no split suits.
void validate_split(const CoupledProblems& problems, const GroupSplit& split, int ranks);

/// One group's measures, reduced over its ranks (max).
struct GroupReport {
  int ranks = 0;
  std::array<long, 3> grid{};
  double idle_s = 0;  ///< time inside the two global operations (the plane, the time step): waiting for the other group
  double busy_s = 0;  ///< compute + transposes
  double time_s = 0;  ///< wall time of the timed steps
  long timed_steps = 0;  ///< steps this run did (those before a restart not included)
  GridCheck check{};  ///< error against the exact solution
  /// {ranks, grid, idle_s, busy_s, time_s, time_per_dof_s (needs steps, threads), error, tolerance}.
  [[nodiscard]] nlohmann::json to_json(int threads) const;
};

/// One warm-up measurement of a split: per step, each group's busy and idle seconds.
struct SplitMeasure {
  int coarse = 0, fine = 0;
  double busy_coarse_s = 0, busy_fine_s = 0, idle_coarse_s = 0, idle_fine_s = 0;
  /// Idle core-seconds per step over both groups: what choose_split minimises.
  [[nodiscard]] double idle_core_s() const noexcept { return coarse * idle_coarse_s + fine * idle_fine_s; }
  [[nodiscard]] nlohmann::json to_json() const;
};

/// A coupled run's result.
struct GroupsResult {
  RunResult run;              ///< over the world; run.check is the fine group's coupled solution
  GroupSplit split;           ///< what ran (chosen if automatic)
  GroupReport coarse, fine;
  std::vector<SplitMeasure> warmup;  ///< the splits choose_split measured (empty for a given split)
  GridCheck standalone{};     ///< a standalone fine run fed the exact inflow, to the same time
  double difference = 0;      ///< max |coupled fine - standalone fine|
  double difference_tolerance = 0;  ///< the coarse and fine error bounds together
  /// Each group's solution within its bound (the fine one within both: its inflow carries the coarse error),
  /// and the coupled fine solution within difference_tolerance of the standalone one.
  [[nodiscard]] bool verified() const noexcept;
  [[nodiscard]] nlohmann::json verification_json() const;
  /// {"split": "given"|"auto", "coarse": {...}, "fine": {...}, "warmup": [...]}.
  [[nodiscard]] nlohmann::json groups_json(int threads) const;
};

/// Measures a few (4) coupled steps of candidate splits and returns the one with the least idle
/// core-seconds per step: first the split proportional to the groups' points, then the one a model of it
/// (each group's busy time inversely proportional to its ranks) balances, and its two neighbours. Collective
/// over `world`; throws InvalidArgument when no split of the world's ranks suits both grids.
[[nodiscard]] GroupSplit choose_split(MPI_Comm world, const RunOptions& options, std::vector<SplitMeasure>& measured);

/// Runs options.solver's problem as two coupled groups split by `split` (chosen first if automatic), then the
/// standalone fine run; records the phases in `metrics`. With `io`: starts both groups from its restart file if
/// there is one (written by any split and layout) and writes checkpoints and snapshots of both grids at its
/// cadence (pencil/io.hpp); the warm-up and the standalone fine run are never checkpointed. Collective over
/// `world`; throws InvalidArgument for a bad split, Error if a solution stops being finite, h5::BadFile /
/// h5::IoError as restart_pencil / write_checkpoint, MpiError.
[[nodiscard]] GroupsResult run_groups(MPI_Comm world, const RunOptions& options, GroupSplit split, Metrics& metrics,
                                      h5::IoSession* io = nullptr);

}  // namespace hympi::pencil
