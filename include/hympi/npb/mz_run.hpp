#pragma once
// The NPB-MZ time loop: the zones of this rank stepped together, with the boundary exchange
// between steps, the verification norms reduced over ranks at the end; and the benchmark
// repeated whole until a minimum time is reached.
#include "hympi/core/error.hpp"
#include "hympi/core/metrics.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/locality/membind.hpp"
#include "hympi/npb/class_params.hpp"
#include "hympi/npb/data_layout.hpp"
#include "hympi/npb/verification.hpp"
#include "hympi/npb/zone_grid.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <mpi.h>
#include <nlohmann/json.hpp>
#include <omp.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string_view>
#include <vector>

namespace hympi::npb {

/// Where the driver lets checkpoints, restart and snapshots in (apps/npb-mz wires them to hympi::h5,
/// so this library needs no HDF5). `fields` are this rank's zone fields [nz][ny][nxmax][5], in
/// ZonePartition::zones_of(rank) order. Both hooks are called on every rank (collective I/O) and
/// run outside the timed loop's seconds.
struct MzHooks {
  /// Called once the fields hold the initial state, before the timed loop: may overwrite every field
  /// with a checkpoint's and returns the time steps that state has done (0: start from the initial
  /// state). Whatever it throws leaves run_mz.
  std::function<int(std::span<double* const> fields)> resume;
  /// Called after time step `step` (1-based) is complete, before the next step's exchange.
  std::function<void(int step, std::span<double* const> fields)> after_step;
  /// Called once per zone of this rank, in zones_of(rank) order, with its solution field u (all of
  /// [nz][ny][nxmax][5]) once every field has been touched, before the timed loop: where its pages
  /// are can be asked now (the app reports them through Metrics::observe_memory).
  std::function<void(std::span<const double> field)> touched;
};

/// What a rank's threads share. loops: the loops of each of its zones in turn, as the reference's OpenMP does;
/// zones: its zones, each solved whole by one thread (a zone's work is the same at any thread count, so the bits
/// are those of loops). With zones no zone's arrays are shared by two threads: on a VM whose host puts its vCPUs
/// on different dies, LU-MZ at 1x2 then runs as fast as with them together (docs/performance.md).
enum class ThreadWork { loops, zones };

contract::ThreadWorkNames<ThreadWork> enum_names(ThreadWork);

/// Parses "loops|zones"; throws InvalidArgument naming the value.
inline ThreadWork parse_thread_work(std::string_view text) { return parse_enum<ThreadWork>(text); }

/// Calls work(l) for l = 0 .. owner.size() - 1. loops: in order on the calling thread, whose team the work's own
/// parallel regions use. zones: each l on the thread owner[l] names (a smaller team than planned folds the owners
/// onto its threads), whose parallel regions inside work(l) then run on that thread alone; so a zone built this way
/// has its pages first touched by the thread that solves it (on its NUMA node), and solved there. What work(l)
/// throws is carried out of the region (ParallelErrors) and rethrown here.
template <class Work>
void for_each_owned(const std::vector<int>& owner, ThreadWork how, Work&& work) {
  if (how == ThreadWork::loops) {
    for (std::size_t l = 0; l < owner.size(); ++l) work(l);
    return;
  }
  ParallelErrors errors;
#pragma omp parallel
  {
    omp_set_num_threads(1);  // this thread's own ICV: the regions inside work(l) get a team of one
    const int t = omp_get_thread_num(), team = omp_get_num_threads();
    for (std::size_t l = 0; l < owner.size(); ++l) {
      if (owner[l] % team == t) errors.capture([&] { work(l); });
    }
  }
  errors.rethrow();
}

/// Throws InvalidArgument when `work` cannot go with `layout`: zones needs first-touch (the other layouts place each
/// zone's pages for a team of threads).
void check_thread_work(ThreadWork work, DataLayout layout);

/// Run options of the driver.
struct MzOptions {
  int niter = 0;          ///< 0: the class's iteration count
  double perturb = 0.0;   ///< added to one interior value of rank 0's first zone after the timed loop
  bool progress = true;   ///< rank 0 prints " Time step N" lines like the reference
  MzHooks hooks;          ///< checkpoints, restart, snapshots (first repetition only); empty: none
  /// Where the zone arrays go and which team sweeps them (BT-MZ, SP-MZ; LU-MZ only takes first touch).
  DataLayoutOptions layout;
  /// What the rank's threads share (zones needs the first-touch layout: the other layouts place each zone for a
  /// team of threads).
  ThreadWork thread_work = ThreadWork::loops;
  /// The machine the layout's locations are cut from; null: first touch, plain OpenMP, no placement summary.
  const Topology* topology = nullptr;
  /// Ask the kernel where every zone's solution pages are after the timed loop (MzResult::placement);
  /// about a microsecond per page, outside the timed loop. Needs `topology` to be this machine.
  bool measure_placement = false;
  /// Options as JSON.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// What one run produced (identical on every rank). The verification values are summed over
/// zones in zone order: the same bits for every ranks x threads layout.
struct MzResult {
  int niter = 0;
  int first_step = 1;        ///< the first time step this run computed (> 1 after a restart)
  double seconds = 0.0;      ///< max over ranks of the timed loop (I/O in the hooks excluded)
  double mops = 0.0;         ///< total, over the steps this run computed
  double io_seconds = 0.0;   ///< max over ranks of the time spent in the hooks (checkpoints, snapshots)
  double exchange_seconds = 0.0;  ///< max over ranks of the time spent in the boundary exchange
  double local_seconds = 0.0;           ///< this rank's timed loop
  double local_exchange_seconds = 0.0;  ///< this rank's time in the boundary exchange
  Verification verification;
  /// The layout as it was made (ZonePlacement::to_json); null without a topology.
  nlohmann::json layout;
  /// Where the pages of every zone's solution field u are, summed over zones and ranks (the same on
  /// every rank); only with MzOptions::measure_placement.
  std::optional<locality::PagePlacement> placement;
};

/// Runs the benchmark on `comm` (one rank per partition rank); sets this rank's OpenMP thread
/// count to partition.threads(rank). With options.hooks.resume it continues a checkpointed run and
/// ends in the state (and verification) of the uninterrupted one.
/// Throws InvalidArgument when the communicator size does not match the partition or the resumed
/// step count is negative or beyond the run's iterations; rethrows what the hooks throw.
[[nodiscard]] MzResult run_mz(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition,
                              MPI_Comm comm, const MzOptions& options, std::ostream* log);

/// The benchmark repeated whole (initialise, time the loop, verify) until the timed loops sum to
/// a minimum time: the class fixes the iterations, which verification needs.
struct MzSeries : RepeatedRuns<MzResult> {
  /// The last repetition's iterations and verification, with seconds, exchange_seconds and mops
  /// over all repetitions (mops = all operations / all seconds).
  MzResult total;
};

/// Calls run_mz until the runs' seconds reach `min_time_s` (at least once) or one fails
/// verification; only the first run prints progress, calls the hooks (a repetition starts over) and
/// measures the page placement. Every rank takes the same decision (the
/// seconds are the slowest rank's). Throws what run_mz throws.
[[nodiscard]] MzSeries run_mz_series(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition,
                                     MPI_Comm comm, MzOptions options, double min_time_s, std::ostream* log);

}  // namespace hympi::npb
