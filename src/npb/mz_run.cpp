#include "hympi/npb/mz_run.hpp"

#include "hympi/core/error.hpp"
#include "hympi/npb/bt.hpp"
#include "hympi/npb/lu.hpp"
#include "hympi/npb/sp.hpp"
#include "hympi/npb/zone_exchange.hpp"

#include <omp.h>

#include <iomanip>
#include <memory>
#include <optional>
#include <vector>
#include <utility>

namespace hympi::npb {

namespace {
// LU-MZ's SSOR relaxation factor (omega_default of the reference).
constexpr double kLuOmega = 1.2;

using Zones = std::vector<std::unique_ptr<ZoneSolver>>;

// The thread that solves each of the rank's zones with ThreadWork::zones: the zones bin-packed over `threads` by
// their points (pack_lpt, as zones over ranks), the same every step.
std::vector<int> thread_of_zones(const ZoneGrid& grid, const std::vector<int>& ids, int threads) {
  std::vector<double> points;
  for (int id : ids) points.push_back(grid.zone(id).points());
  return pack_lpt(points, threads);
}

}  // namespace

nlohmann::json MzOptions::to_json() const {
  return nlohmann::json{{"niter", niter},
                        {"perturb", perturb},
                        {"data_layout", hympi::to_string(layout.layout)},
                        {"thread_work", hympi::to_string(thread_work)}};
}

void check_thread_work(ThreadWork work, DataLayout layout) {
  if (work == ThreadWork::zones && layout != DataLayout::first_touch) {
    throw InvalidArgument("--thread-work zones: needs --data-layout first-touch (" + hympi::to_string(layout) +
                          " places each zone's pages for a team of threads)");
  }
}

MzResult run_mz(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition, MPI_Comm comm,
                const MzOptions& options, std::ostream* log) {
  const int rank = partition_rank(partition, comm);
  const int niter = options.niter > 0 ? options.niter : p.niter;
  omp_set_num_threads(partition.threads(rank));
  if (p.benchmark == Benchmark::lu && options.layout.layout != DataLayout::first_touch) {
    throw InvalidArgument("--data-layout " + hympi::to_string(options.layout.layout) +
                          ": LU-MZ has first-touch only (bt-mz and sp-mz have every layout)");
  }
  check_thread_work(options.thread_work, options.layout.layout);

  const CfdConstants cfd = CfdConstants::make(p.geometry, p.dt);
  const LuConstants luc = LuConstants::make(p.geometry, p.dt, kLuOmega);
  // Declared before the zones, which point to it: it makes their arrays and runs their teams.
  std::optional<ZonePlacement> placed;
  if (options.topology != nullptr) placed.emplace(*options.topology, options.layout, partition.threads(rank));
  const ZonePlacement& placement = placed ? *placed : ZonePlacement::plain();
  // Each zone is built where it will be solved: with zones, on its thread, which so first-touches its pages.
  const std::vector<int>& ids = partition.zones_of(rank);
  const std::vector<int> owner = thread_of_zones(grid, ids, partition.threads(rank));
  Zones zones(ids.size());
  for_each_owned(owner, options.thread_work, [&](std::size_t l) {
    const ZoneDims dims = ZoneDims::of(grid.zone(ids[l]));
    switch (p.benchmark) {
      case Benchmark::bt: zones[l] = std::make_unique<BtZone>(cfd, dims, placement, ids[l]); break;
      case Benchmark::sp: zones[l] = std::make_unique<SpZone>(cfd, dims, placement, ids[l]); break;
      case Benchmark::lu: zones[l] = std::make_unique<LuZone>(luc, dims, placement); break;
    }
  });
  std::vector<double*> fields;
  for (auto& z : zones) fields.push_back(z->field());
  ZoneExchange exchange(grid, partition, comm, 5);
  auto each_zone = [&](auto&& work) {
    for_each_owned(owner, options.thread_work, [&](std::size_t l) { work(*zones[l]); });
  };

  each_zone([](ZoneSolver& z) { z.initialize(); });
  // One untimed step touches every page and code path, then the fields start over (as NPB).
  exchange.exchange(fields);
  each_zone([](ZoneSolver& z) { z.step(); });
  each_zone([](ZoneSolver& z) { z.initialize(); });
  if (options.hooks.touched) {
    for (std::size_t l = 0; l < zones.size(); ++l)
      options.hooks.touched(std::span<const double>(fields[l], ZoneDims::of(grid.zone(ids[l])).size5()));
  }

  // A checkpoint is written after a step and before the next step's exchange, so it holds u with
  // the boundary planes that step used; the loop below redoes the exchange at its start exactly as
  // the uninterrupted run does. Only what a step derives from u must be recomputed (restored()).
  int done = 0;
  if (options.hooks.resume) {
    done = options.hooks.resume(fields);
    if (done < 0 || done > niter) {
      throw InvalidArgument("resumed at time step " + std::to_string(done) + ", outside the run's " +
                            std::to_string(niter) + " time steps");
    }
    if (done > 0) {
      each_zone([](ZoneSolver& z) { z.restored(); });
      if (log != nullptr && rank == 0) *log << " Resumed after time step " << done << "\n" << std::flush;
    }
  }

  HYMPI_MPI(MPI_Barrier(comm));
  double t_exchange = 0.0;
  double t_io = 0.0;
  const double t0 = MPI_Wtime();
  for (int step = done + 1; step <= niter; ++step) {
    if (log != nullptr && options.progress && rank == 0 && (step % 20 == 0 || step == 1 || step == niter)) {
      *log << " Time step " << std::setw(4) << step << "\n" << std::flush;
    }
    const double te = MPI_Wtime();
    exchange.exchange(fields);
    t_exchange += MPI_Wtime() - te;
    each_zone([](ZoneSolver& z) { z.step(); });
    if (options.hooks.after_step) {
      // Checkpoints and snapshots are not the benchmark's work: their time is reported as I/O.
      const double ti = MPI_Wtime();
      options.hooks.after_step(step, fields);
      t_io += MPI_Wtime() - ti;
    }
  }
  for (auto& z : zones) z->finish_timed();
  const double t_local = MPI_Wtime() - t0 - t_io;
  // Access pattern: the threads that swept the zones must still be the ones bound to their locations.
  placement.check_team();
  std::optional<locality::PagePlacement> placement_summary;
  if (options.measure_placement && options.topology != nullptr && options.topology->is_this_system()) {
    // After the timed loop, so the pages the sweeps touched are all there; before the norms.
    locality::PagePlacement mine;
    for (const auto& z : zones) mine.merge(z->field_placement());
    placement_summary = sum_over_ranks(mine, comm);
  }
  // A corrupted final state must not verify; tests use this to prove the check can fail.
  if (options.perturb != 0.0 && rank == 0 && !zones.empty()) zones.front()->perturb(options.perturb);

  // Each zone's norms go to its own slot and are summed in zone order on every rank, so the
  // verification values are the same bits whichever ranks own the zones (a restart on another
  // layout must reproduce them exactly). The reduction only adds zeros to each slot: exact.
  constexpr int kNorms = 11;
  const std::vector<int>& mine = partition.zones_of(rank);
  std::vector<double> per_zone(static_cast<std::size_t>(kNorms) * grid.num_zones(), 0.0);
  for (std::size_t l = 0; l < zones.size(); ++l) {
    const ZoneNorms n = zones[l]->norms();
    double* slot = per_zone.data() + static_cast<std::size_t>(kNorms) * mine[l];
    for (int m = 0; m < 5; ++m) {
      slot[m] = n.residual[m];
      slot[5 + m] = n.error[m];
    }
    slot[10] = n.surface;
  }
  HYMPI_MPI(MPI_Allreduce(MPI_IN_PLACE, per_zone.data(), static_cast<int>(per_zone.size()), MPI_DOUBLE, MPI_SUM,
                          comm));
  double global[kNorms] = {};
  for (int id = 0; id < grid.num_zones(); ++id) {
    for (int q = 0; q < kNorms; ++q) global[q] += per_zone[static_cast<std::size_t>(kNorms) * id + q];
  }
  double times[3] = {t_local, t_exchange, t_io};
  double tmax[3] = {};
  HYMPI_MPI(MPI_Allreduce(times, tmax, 3, MPI_DOUBLE, MPI_MAX, comm));

  MzResult r;
  r.niter = niter;
  r.first_step = done + 1;
  r.seconds = tmax[0];
  r.exchange_seconds = tmax[1];
  r.io_seconds = tmax[2];
  r.local_seconds = t_local;
  r.local_exchange_seconds = t_exchange;
  std::array<double, 5> xcr{}, xce{};
  for (int m = 0; m < 5; ++m) {
    xcr[m] = global[m];
    xce[m] = global[5 + m];
  }
  r.verification = verify(p, niter, p.dt, xcr, xce, global[10]);
  if (placed) r.layout = placed->to_json();
  r.placement = std::move(placement_summary);
  // Verification is the whole run's (niter); the rate only counts the steps timed here.
  r.mops = mops_total(p.mops, grid, niter - done, r.seconds);
  return r;
}

MzSeries run_mz_series(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition, MPI_Comm comm,
                       MzOptions options, double min_time_s, std::ostream* log) {
  const auto run = [&] {
    MzResult r = run_mz(p, grid, partition, comm, options, log);
    options.progress = false;  // one set of " Time step" lines is enough
    options.hooks = {};        // a repetition starts from the initial state: no restart, no I/O
    options.measure_placement = false;  // every repetition places its arrays alike
    return r;
  };
  MzSeries series{repeat_runs(min_time_s, run, [](const MzResult& r) { return r.verification.passed; }), {}};
  double exchange_s = 0.0, ops = 0.0;
  for (const MzResult& r : series.runs) {
    exchange_s += r.exchange_seconds;
    ops += r.mops * r.seconds;  // Mop of this repetition
  }
  series.total = series.runs.back();
  series.total.seconds = series.seconds;
  series.total.exchange_seconds = exchange_s;
  series.total.mops = series.seconds > 0.0 ? ops / series.seconds : 0.0;
  return series;
}

}  // namespace hympi::npb
