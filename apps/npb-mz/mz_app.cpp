#include "mz_app.hpp"

#include "mz_io.hpp"

#include "hympi/npb/cfd.hpp"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <vector>

namespace hympi::npb {

void MzApp::add_options(hympi::OptionSet& cli) {
  cli.add("--class", problem_class_, "problem class: S, W, A, B, C, D (E, F: geometry only, never run)")
      .show_default();
  cli.add("--packing", packing_, "zone-to-rank packing: npb (reference bin packing) or lpt")
      .show_default();
  cli.flag("--balance-threads", balance_threads_, "give loaded ranks more threads (NPB_MZ_BLOAD)");
  cli.add("--max-threads", max_threads_, "cap per rank when balancing threads (0: none)")
      .show_default();
  iterations_option_ =
      cli.add("--iterations", iterations_,
              "override the class's iteration count (fails verification; the benchmark then runs once)");
  cli.add("--perturb", perturb_, "add this to one value of the final solution (must fail verification)");
  cli.flag("--split-report", split_report_, "also report OVERFLOW-style zone splitting for this rank count");
  cli.add("--split-table", split_table_,
          "rank counts for a Table-3 style splitting table (total points per number of groups)")
      .separator(',');
  cli.add("--split-tolerance", split_tolerance_, "allowed block excess over the mean when splitting")
      .show_default();
  cli.add("--data-layout", data_layout_,
          "where the zone arrays' pages go: first-touch, one-location, access-pattern or random "
          "(locations: HYMPI_NUM_LOCS, default one per NUMA node; lu-mz: first-touch only)")
      .show_default();
  cli.add("--layout-seed", layout_seed_, "seed of --data-layout random (which page goes where)")
      .show_default();
  cli.add("--thread-work", thread_work_,
          "what a rank's threads share: loops (each zone's loops in turn, as the reference) or zones (each thread "
          "solves whole zones; needs --data-layout first-touch)")
      .show_default();
  cli.add("--data", data_file_,
          "verification file (default: DATA_DIR/npb-mz/verification.json; config data_dir, env HYMPI_DATA_DIR)");
}

void MzApp::apply_settings(const Settings& settings) {
  const SettingValue& dir = settings.get("data_dir");
  if (data_file_.empty() && !dir.text.empty()) data_file_ = dir.text + "/npb-mz/verification.json";
  num_locs_ = settings.get("num_locs").text;
  // A bad HYMPI_NUM_LOCS is named by the options layer, whichever layout uses it; more locations than PUs before
  // anything runs, where the locations would refuse them only inside the run, once per rank.
  (void)settings.parse("num_locs", [](const std::string& text) {
    const locality::LocationsSpec spec = locality::parse_num_locs(text);
    if (spec.count > 0) locality::Locations::check_count(Topology::this_machine(), spec.count);
    return spec;
  });
}

void MzApp::validate(const Layout& layout) const {
  const ClassParams p = load_class_params(benchmark_, problem_class_, data_file_);
  if (p.geometry_only)
    throw InvalidArgument("--class " + problem_class_ + ": " + to_string(benchmark_) + " class " + problem_class_ +
                          " is geometry only (never run or verified here); run S, W, A, B, C or D");
  const ZoneGrid zones(p.geometry);
  if (layout.ranks > zones.num_zones()) {
    throw InvalidArgument(std::to_string(layout.ranks) + " ranks exceed the " + std::to_string(zones.num_zones()) +
                          " zones of " + to_string(benchmark_) + " class " + problem_class_);
  }
  if (layout.threads < 1) throw InvalidArgument("threads must be >= 1, got " + std::to_string(layout.threads));
  (void)parse_packing_method(packing_);
  const DataLayout data_layout = parse_data_layout(data_layout_);
  if (layout_seed_ < 0) throw InvalidArgument("--layout-seed must be >= 0, got " + std::to_string(layout_seed_));
  if (benchmark_ == Benchmark::lu && data_layout != DataLayout::first_touch) {
    throw InvalidArgument("--data-layout " + data_layout_ + ": lu-mz has first-touch only (bt-mz and sp-mz have "
                          "every layout)");
  }
  check_thread_work(parse_thread_work(thread_work_), data_layout);
  if (max_threads_ < 0) throw InvalidArgument("--max-threads must be >= 0, got " + std::to_string(max_threads_));
  // 0 stands for "the class's count" inside; given on the command line it would be silently ignored.
  if (iterations_option_->given() && iterations_ < 1)
    throw InvalidArgument("--iterations must be >= 1, got " + std::to_string(iterations_) +
                          " (leave it out for the " + std::to_string(p.niter) + " iterations of class " +
                          problem_class_ + ")");
  for (int n : split_table_) {
    if (n < 1) throw InvalidArgument("--split-table entries must be >= 1, got " + std::to_string(n));
    // More groups than points would split zones into empty blocks (and 2^31 of them fill the memory).
    if (double(n) > zones.total_points())
      throw InvalidArgument("--split-table entry " + std::to_string(n) + " exceeds the " +
                            std::to_string(static_cast<long long>(zones.total_points())) + " points of " +
                            to_string(benchmark_) + " class " + problem_class_);
  }
  if (!(split_tolerance_ >= 0.0)) {
    throw InvalidArgument("--split-tolerance must be >= 0, got " + std::to_string(split_tolerance_));
  }
}

// The partition run() makes.
std::pair<double, double> MzApp::zone_bytes(const Layout& layout, double doubles) const {
  const ClassParams p = load_class_params(benchmark_, problem_class_, data_file_);
  const ZoneGrid grid(p.geometry);
  ZonePartitionOptions po;
  po.method = parse_packing_method(packing_);
  po.threads_per_rank = layout.threads;
  po.balance_threads = balance_threads_;
  po.max_threads = max_threads_;
  const ZonePartition partition(grid, layout.ranks, po);
  double rank = 0, total = 0;
  for (int r = 0; r < layout.ranks; ++r) {
    double mine = 0;
    for (const int id : partition.zones_of(r))
      mine += double(ZoneDims::of(grid.zones()[static_cast<std::size_t>(id)]).size1()) * doubles * sizeof(double);
    rank = std::max(rank, mine);
    total += mine;
  }
  return {rank, total};
}

MemoryEstimate MzApp::memory_estimate(const Layout& layout) const {
  // The arrays of CfdZoneFields (u, rhs, forcing: 5 each; us, vs, ws, qs, rho_i, square; SP also speed) and of
  // LU's zones (u, rsd, frct: 5 each; qs, rho_i).
  const double doubles = benchmark_ == Benchmark::bt ? 21 : benchmark_ == Benchmark::sp ? 22 : 17;
  const auto [rank, total] = zone_bytes(layout, doubles);
  return {rank, total,
          "--class " + problem_class_ + " (" + std::to_string(int(doubles)) + " doubles per point of its zones)"};
}

MemoryEstimate MzApp::checkpoint_staging(const Layout& layout) const {
  const auto [rank, total] = zone_bytes(layout, 5);
  return {rank, total, "u, 5 doubles per point"};
}

void MzApp::check_restart(const std::string& path, const h5::CheckpointHeader& header) const {
  const ClassParams p = load_class_params(benchmark_, problem_class_, data_file_);
  check_mz_checkpoint(path, header, iterations_ > 0 ? iterations_ : p.niter);
}

nlohmann::json MzApp::problem_size() const {
  const ClassParams p = load_class_params(benchmark_, problem_class_, data_file_);
  return mz_problem_size(name(), p, ZoneGrid(p.geometry));
}

ResultRecord MzApp::run(AppContext& ctx) {
  const ClassParams p = load_class_params(benchmark_, problem_class_, data_file_);
  const ZoneGrid grid(p.geometry);
  const int nranks = ctx.env.size();
  const int rank = ctx.env.rank();

  ZonePartitionOptions po;
  po.method = parse_packing_method(packing_);
  po.threads_per_rank = ctx.env.threads();
  po.balance_threads = balance_threads_;
  po.max_threads = max_threads_;
  const ZonePartition partition(grid, nranks, po);

  MzOptions mo;
  mo.niter = iterations_;
  mo.perturb = perturb_;
  mo.layout.layout = parse_data_layout(data_layout_);
  mo.layout.seed = static_cast<std::uint64_t>(layout_seed_);
  mo.thread_work = parse_thread_work(thread_work_);
  mo.layout.locations = locality::parse_num_locs(num_locs_);
  mo.topology = &ctx.topology;
  mo.measure_placement = ctx.topology.is_this_system();
  if (ctx.io != nullptr) mo.hooks = mz_io_hooks(*ctx.io, grid, partition, rank, iterations_ > 0 ? iterations_ : p.niter, p.dt);
  // Where the zones' solution fields landed (--membind), asked once: the hooks run in the first repetition only.
  mo.hooks.touched = [&ctx](std::span<const double> u) { ctx.metrics.observe_memory("u", std::as_bytes(u)); };
  ZoneSplit split;
  if (split_report_) split = split_zones(grid, nranks, split_tolerance_);
  if (rank == 0) {
    print_header(std::cout, p, iterations_ > 0 ? iterations_ : p.niter, nranks, partition.total_threads());
    print_partition(std::cout, partition);
    if (split_report_) print_split_summary(std::cout, split);
    if (!split_table_.empty()) print_split_table(std::cout, grid, split_table_, split_tolerance_);
  }

  // --iterations fixes the run (it cannot verify); otherwise repeat to reach --min-time.
  const double min_time_s = ctx.kernel_min_time_s();
  const MzSeries series =
      run_mz_series(p, grid, partition, ctx.env.world(), mo, min_time_s, rank == 0 ? &std::cout : nullptr);
  // This rank's own times, so the framework's imbalance sees rank differences.
  for (const MzResult& r : series.runs) {
    ctx.metrics.add("zone_solve", PhaseKind::computation, r.local_seconds - r.local_exchange_seconds);
    ctx.metrics.add("zone_exchange", PhaseKind::communication, r.local_exchange_seconds);
  }
  const MzResult& r = series.total;
  if (rank == 0) {
    print_repetitions(std::cout, series.runs.size(), series.all_verified, min_time_s);
    print_report(std::cout, p, r, nranks, partition.total_threads());
  }

  // The last repetition's verification block is printed; a failure of any counts.
  ResultRecord rec = repeated_runs_record(name(), p.problem_class, series);
  rec.metrics = nlohmann::json{{"mops_total", r.mops},
                               {"mops_per_process", r.mops / nranks},
                               {"mops_per_thread", r.mops / partition.total_threads()},
                               {"iterations", r.niter},
                               {"repetitions", series.runs.size()},
                               {"repetition_s", series.run_seconds()},
                               {"exchange_s", r.exchange_seconds},
                               {"first_step", series.runs.front().first_step},
                               {"io_s", series.runs.front().io_seconds},
                               {"class", p.to_json()},
                               {"zones", grid.to_json()},
                               {"partition", partition.to_json()},
                               {"verification", r.verification.to_json()},
                               {"run_options", mo.to_json()},
                               {"data_layout", hympi::to_string(mo.layout.layout)},
                               {"data_layout_details", series.runs.front().layout}};
  // Where the solution's pages are (every zone, every rank), with the layout's intent per page: the proof of what
  // the layout did (the frame's page_placement has the same pages before the timed loop, with --membind's intent).
  if (const auto& placed = series.runs.front().placement)
    rec.metrics["data_layout_placement"] = {{"u", placed->to_json()}};
  if (split_report_) rec.metrics["split"] = split.to_json();
  return rec;
}

}  // namespace hympi::npb
