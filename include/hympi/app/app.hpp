#pragma once
// The frame every reference app runs in: options, MPI start-up, binding, errors, result line.
#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "hympi/app/options.hpp"
#include "hympi/app/settings.hpp"
#include "hympi/core/affinity.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/metrics.hpp"
#include "hympi/core/result.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/h5/checkpoint.hpp"

namespace hympi {

/// The ranks x threads layout an app is asked to run with.
struct Layout {
  int ranks = 1;
  int threads = 1;
};

/// The memory an app's problem needs at its peak, as the app estimates it from its options and layout: what the
/// frame compares with the node's memory before anything is allocated (--validate-ranks and the launched run).
struct MemoryEstimate {
  double rank_bytes = 0;   ///< the largest rank's peak
  double total_bytes = 0;  ///< all ranks' together at the job's peak
  /// The option and value that set the size and what was counted, for the refusal, e.g.
  /// "--size 4096 (u and f with halos, 16 B per point)".
  std::string counted;
};

/// Throws InvalidArgument naming estimate.counted and the estimate in GiB when one rank's peak, or the peak of
/// the `ranks_on_node` (of `ranks`) ranks on one node, exceeds `node_bytes`. Never throws for an empty estimate.
void check_memory(const MemoryEstimate& estimate, int ranks, int ranks_on_node, double node_bytes);

/// check_memory against this machine's memory (hwloc's), where `ranks_on_node` of the job's `ranks` run; loads
/// no topology for an empty estimate.
void check_memory_here(const MemoryEstimate& estimate, int ranks, int ranks_on_node);

/// Ranks this process shares the machine with, for a check without MPI: the launcher's local size when it says
/// (Open MPI, MPICH/Hydra), else all `ranks` (hympi run launches on one machine, virtual nodes included).
[[nodiscard]] int ranks_on_this_machine(int ranks);

/// What an app's run() gets: its environment, the machine, a metrics sink and the bindings.
struct AppContext {
  Environment& env;
  const Topology& topology;
  Metrics& metrics;
  AffinityOptions affinity;
  /// Every rank's and thread's observed binding (complete on rank 0, empty elsewhere).
  const std::vector<ThreadBinding>& bindings;
  /// Seconds of timed kernel work asked for (--min-time, env HYMPI_MIN_TIME, default 1; 0 = no minimum): what the
  /// result record reports as min_time_s.
  double min_time_s = 0.0;
  /// Whether the command line gave the app's repetitions_option(): the run repeats exactly as often as it says.
  bool repetitions_fixed = false;
  /// Checkpoints, restart and snapshots asked for on the command line (--checkpoint, --restart,
  /// --snapshot, ...); null for apps whose checkpoints() is false. With a checkpoint or a restart the
  /// frame sets min_time_s to 0: the step count must not depend on timing for a restart to be bitwise.
  h5::IoSession* io = nullptr;

  /// The minimum time the app's timed part should repeat to reach: min_time_s, or 0 when the repetitions are fixed.
  [[nodiscard]] double kernel_min_time_s() const { return repetitions_fixed ? 0.0 : min_time_s; }
};

/// One reference application: options, validation and the measured, verified run.
class AppDefinition {
 public:
  virtual ~AppDefinition() = default;
  /// Short name, e.g. "rb3d"; the binary is hympi-<name>.
  [[nodiscard]] virtual std::string name() const = 0;
  /// One line for --help: the description contract.toml declares for name(); throws Error for an app
  /// the contract does not declare.
  [[nodiscard]] std::string description() const;
  /// Declares the app's own options on `cli`.
  virtual void add_options(OptionSet& cli) = 0;
  /// The option of add_options() that fixes how often the timed part repeats (e.g. "--iterations"); given, the
  /// frame sets context.repetitions_fixed and --min-time adds no repetition. Empty (the default): --min-time always
  /// applies.
  [[nodiscard]] virtual std::string repetitions_option() const { return {}; }
  /// Takes what the app needs from the resolved options layer (config file, HYMPI_* environment),
  /// after parsing and before validate(); throws InvalidArgument naming a bad value.
  virtual void apply_settings(const Settings& settings) { (void)settings; }
  /// Throws InvalidArgument naming the bad value if the options do not suit `layout`.
  virtual void validate(const Layout& layout) const { (void)layout; }
  /// The files the run reads besides a restart file (a data file), after apply_settings(): the frame refuses a
  /// checkpoint or snapshot that would write over one.
  [[nodiscard]] virtual std::vector<std::string> input_files() const { return {}; }
  /// MPI thread support the app needs.
  [[nodiscard]] virtual ThreadLevel thread_level() const { return ThreadLevel::funneled; }
  /// Whether an unverified result is a failure: "verification FAILED" and exit 1 (apps that only report, and a run
  /// that asked for no verification, say no; their results still say "verified": false).
  [[nodiscard]] virtual bool verification_required() const { return true; }
  /// Whether the app writes checkpoints, restarts from them and writes snapshots (context.io): the frame
  /// then offers --checkpoint, --checkpoint-every, --restart, --snapshot, --snapshot-every and --h5-*.
  [[nodiscard]] virtual bool checkpoints() const { return false; }
  /// The problem size a checkpoint records and a restart demands (any JSON; called after validate()).
  [[nodiscard]] virtual nlohmann::json problem_size() const { return nullptr; }
  /// The memory the problem needs on `layout` (called after validate()); empty: not estimated (apps whose
  /// memory does not grow with their options). Throws InvalidArgument like validate().
  [[nodiscard]] virtual MemoryEstimate memory_estimate(const Layout& layout) const {
    (void)layout;
    return {};
  }
  /// What a checkpoint copies to its staging buffer on `layout` (h5::IoSession keeps it while the background
  /// writer writes, and for the next checkpoint), counted what it is (e.g. "u, 8 B per point"); the frame adds it
  /// to memory_estimate() for a run that checkpoints. Empty: the app does not checkpoint.
  [[nodiscard]] virtual MemoryEstimate checkpoint_staging(const Layout& layout) const {
    (void)layout;
    return {};
  }
  /// What a restart demands of checkpoint `path`'s header beyond the app and size the frame checks (a step
  /// within this run's, the state the app reads); throws h5::BadFile naming `path`. The check before launch
  /// (--validate-ranks with --restart) and the launched run's restart both call it.
  virtual void check_restart(const std::string& path, const h5::CheckpointHeader& header) const {
    (void)path;
    (void)header;
  }
  /// Runs, verifies and returns what was measured (collective over env.world()), its timed part repeated to reach
  /// context.kernel_min_time_s(); the record's timed_repetitions counts the repetitions timed, and the frame fills
  /// repetitions_fixed and min_time_s from the context.
  virtual ResultRecord run(AppContext& context) = 0;
};

/// The record of an NPB-style benchmark run whole until it reached the minimum time (RepeatedRuns, e.g. IsSeries,
/// MzSeries): "class <problem_class>", the time and Mop/s of series.total (all runs together), verified when every
/// run verified, one timed repetition per run.
template <class Series>
[[nodiscard]] ResultRecord repeated_runs_record(const std::string& app, const std::string& problem_class,
                                                const Series& series) {
  ResultRecord rec;
  rec.app = app;
  rec.problem = "class " + problem_class;
  rec.time_s = series.total.seconds;
  rec.rate = series.total.mops;
  rec.rate_unit = "Mop/s";
  rec.verified = series.all_verified;
  rec.timed_repetitions = static_cast<int>(series.runs.size());
  return rec;
}

/// Every check of `app`'s options for `layout` with `ranks_on_node` ranks on this machine: app.validate(), then its
/// memory_estimate() (with its staged checkpoint when `checkpointing`) against this machine's memory (hwloc). The
/// one function --validate-ranks and the launched run both call, so the two cannot drift; throws InvalidArgument
/// naming the bad value.
void validate_layout(const AppDefinition& app, const Layout& layout, int ranks_on_node, bool checkpointing);

/// Parses options, initialises MPI, binds, validates, runs `app` and prints HYMPI_RESULT on
/// rank 0. Returns the process exit code: 0 ok, 1 runtime failure or failed verification
/// (with --require-verified, the default), 2 bad input. `--validate-ranks N` only validates
/// the options for N ranks, without MPI, so launchers can reject bad input before launching: validate_layout()
/// and, with --restart, the checkpoint (h5::check_checkpoint_file with the app's check_restart).
/// A `--min-time` (or HYMPI_MIN_TIME) that is negative or not a finite number is bad input. The frame's
/// options (--bind, --dist, --oversubscribe, --min-time, HYMPI_VIRTUAL_NODES, ...) come from the options
/// layer (Settings): defaults < hympi.toml or --config < HYMPI_* < command line; an unknown key in the
/// config file is bad input. `--show-config` prints the resolved options, `--contract` what the binary
/// was built to declare (name, description, enum names, options, result fields) as JSON.
int run_app(int argc, char** argv, AppDefinition& app);

/// Prints "prog: error: what" (on the launcher's rank 0 only: launched_rank) and returns the exit code for an
/// exception caught in a main: 2 for bad input (InvalidArgument), 1 for anything else. Never throws.
int error_exit_code(const std::string& prog, const std::exception& e);

/// The JSON `--contract` prints for `app`: its name, binary and description and the contract's enums,
/// options and result fields as this binary knows them.
[[nodiscard]] nlohmann::json contract_json(const AppDefinition& app);

}  // namespace hympi
