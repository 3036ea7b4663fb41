#pragma once
// Named phase timers with communication vs computation accounting, reduced over ranks.
#include <mpi.h>

#include <cstddef>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "hympi/core/enum_names.hpp"

namespace hympi {

/// What a phase spends its time on; decides whether it counts as comm_s or comp_s.
enum class PhaseKind { computation, communication, other };

contract::PhaseKindNames<PhaseKind> enum_names(PhaseKind);

/// min/avg/max over ranks of one phase's time.
struct PhaseStats {
  std::string name;
  PhaseKind kind = PhaseKind::other;
  double min_s = 0, avg_s = 0, max_s = 0;
};

/// A run's metrics reduced over all ranks.
struct MetricsSummary {
  std::vector<PhaseStats> phases;
  double comm_s = 0;       ///< communication time, average over ranks
  double comp_s = 0;       ///< computation time, average over ranks
  double imbalance = 1;    ///< max/avg over ranks of computation time (1 = perfectly balanced)
  double max_rss_mib = 0;  ///< peak resident memory of the largest rank
  double node_rss_mib = 0; ///< peak resident memory summed over the ranks of a node, largest node
  /// As JSON (phases keyed by name).
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Where the pages of an app's arrays landed. The frame installs one (page placement through hwloc);
/// apps report their main arrays through Metrics::observe_memory once they are first touched.
class MemoryProbe {
 public:
  virtual ~MemoryProbe() = default;
  /// Records where the pages of `area` (part of array `name`; several calls per name add up) are;
  /// throws what the probe's page query throws.
  virtual void observe(const std::string& name, std::span<const std::byte> area) = 0;
};

/// Accumulates wall time per named phase on one rank.
class Metrics {
 public:
  /// Stops its phase's timer when it goes out of scope.
  class Scope {
   public:
    Scope(Metrics& metrics, std::string name, PhaseKind kind);
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    ~Scope();

   private:
    Metrics& metrics_;
    std::string name_;
    PhaseKind kind_;
    double start_;
  };

  /// Times the enclosing scope as phase `name`.
  [[nodiscard]] Scope time(std::string name, PhaseKind kind) { return Scope(*this, std::move(name), kind); }
  /// Adds `seconds` to phase `name`; a phase keeps the kind it was first given.
  void add(const std::string& name, PhaseKind kind, double seconds);
  /// Accumulated seconds of one phase (0 if never timed).
  [[nodiscard]] double seconds(const std::string& name) const;
  /// Sum over phases of one kind.
  [[nodiscard]] double total(PhaseKind kind) const;
  /// Reduces over `world` and sums memory within `node` (collective over world).
  [[nodiscard]] MetricsSummary reduce(MPI_Comm world, MPI_Comm node) const;
  /// Where array `name`'s pages are goes to the installed probe (nothing without one); call after the
  /// first touch. Throws what the probe throws.
  void observe_memory(const std::string& name, std::span<const std::byte> area) {
    if (probe_ != nullptr) probe_->observe(name, area);
  }
  /// Installs the probe observe_memory reports to (null: none); the probe must outlive its use.
  void set_memory_probe(MemoryProbe* probe) { probe_ = probe; }
  /// The installed probe (null: none), so a second Metrics of the same run can report to it too.
  [[nodiscard]] MemoryProbe* memory_probe() const noexcept { return probe_; }

 private:
  MemoryProbe* probe_ = nullptr;
  struct Phase {
    PhaseKind kind;
    double seconds;
  };
  std::map<std::string, Phase> phases_;
};

/// How many repetitions a timed loop should have done in total so that it lasts `min_time_s`,
/// after `done` repetitions took `elapsed_s` (pass the max over ranks, so every rank agrees):
/// `done` once elapsed_s >= min_time_s, else an extrapolation with 5 % margin, at least done + 1,
/// at most 100 x done (a short, noisy first measure must not overshoot wildly) and at most `cap`.
/// Throws InvalidArgument for done < 1, cap < done or a negative or non-finite time.
long repetitions_for_min_time(long done, double elapsed_s, double min_time_s, long cap);

/// A benchmark run whole, again and again, until its runs' seconds add up to a minimum time: for benchmarks whose
/// class fixes the iterations (verification needs them), so that only whole runs can be added (NPB IS, NPB-MZ).
template <class Result>
struct RepeatedRuns {
  std::vector<Result> runs;  ///< every run, in order; none follows one that failed verification
  bool all_verified = true;  ///< every run verified
  double seconds = 0;        ///< the runs' seconds together
  /// Each run's seconds, in order (a result's repetition_s).
  [[nodiscard]] std::vector<double> run_seconds() const {
    std::vector<double> out;
    out.reserve(runs.size());
    for (const Result& r : runs) out.push_back(r.seconds);
    return out;
  }
};

/// Calls `run` until its results' seconds (Result::seconds, the slowest rank's, so that every rank stops after the
/// same run) reach `min_time_s`, at least once, or until `verified(result)` is false. Throws what `run` throws.
template <class Run, class Verified>
[[nodiscard]] RepeatedRuns<std::invoke_result_t<Run&>> repeat_runs(double min_time_s, Run&& run, Verified&& verified) {
  RepeatedRuns<std::invoke_result_t<Run&>> out;
  do {
    out.runs.push_back(run());
    out.seconds += out.runs.back().seconds;
    out.all_verified = out.all_verified && verified(out.runs.back());
  } while (out.seconds < min_time_s && out.all_verified);
  return out;
}

/// For more than one run, the NPB-style note before the result block: how many runs reached --min-time
/// `min_time_s`, whether all verified, and that the block's time and Mop/s cover them all. Nothing for one run.
void print_repetitions(std::ostream& os, std::size_t runs, bool all_verified, double min_time_s);

/// Peak resident set size of this process in MiB (getrusage's VmHWM).
double max_rss_mib();

}  // namespace hympi
