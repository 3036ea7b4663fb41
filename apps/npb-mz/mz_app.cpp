#include "mz_app.hpp"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <vector>

namespace hympi::npb {

void MzApp::add_options(CLI::App& cli) {
  cli.add_option("--class", problem_class_, "problem class: S, W, A, B, C, D (E, F: geometry only)")
      ->capture_default_str();
  cli.add_option("--packing", packing_, "zone-to-rank packing: npb (reference bin packing) or lpt")
      ->capture_default_str();
  cli.add_flag("--balance-threads", balance_threads_, "give loaded ranks more threads (NPB_MZ_BLOAD)");
  cli.add_option("--max-threads", max_threads_, "cap per rank when balancing threads (0: none)")
      ->capture_default_str();
  iterations_option_ =
      cli.add_option("--iterations", iterations_,
                     "override the class's iteration count (fails verification; the benchmark then runs once)");
  cli.add_option("--perturb", perturb_, "add this to one value of the final solution (must fail verification)");
  cli.add_flag("--split-report", split_report_, "also report OVERFLOW-style zone splitting for this rank count");
  cli.add_option("--split-table", split_table_,
                 "rank counts for a Table-3 style splitting table (total points per number of groups)")
      ->delimiter(',');
  cli.add_option("--split-tolerance", split_tolerance_, "allowed block excess over the mean when splitting")
      ->capture_default_str();
  cli.add_option("--data", data_file_,
                 "verification file (default: DATA_DIR/npb-mz/verification.json; config data_dir, env HYMPI_DATA_DIR)");
}

void MzApp::apply_settings(const Settings& settings) {
  const SettingValue& dir = settings.get("data_dir");
  if (data_file_.empty() && !dir.text.empty()) data_file_ = dir.text + "/npb-mz/verification.json";
}

void MzApp::validate(const Layout& layout) const {
  const std::string path = data_file_.empty() ? verification_file_path() : data_file_;
  const auto data = load_json_file(path);
  const ClassParams p = load_class_params(data, benchmark_, problem_class_);
  const ZoneLayout zones(p.geometry);
  if (layout.ranks > zones.num_zones()) {
    throw InvalidArgument(std::to_string(layout.ranks) + " ranks exceed the " + std::to_string(zones.num_zones()) +
                          " zones of " + to_string(benchmark_) + " class " + problem_class_);
  }
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr) {
    // libgomp silently ignores a zero; we refuse it so the layout is what the user believes.
    char* end = nullptr;
    const long v = std::strtol(env, &end, 10);
    if (end != env && v < 1) throw InvalidArgument("OMP_NUM_THREADS must be >= 1, got " + std::string(env));
  }
  if (layout.threads < 1) throw InvalidArgument("threads must be >= 1, got " + std::to_string(layout.threads));
  (void)parse_packing_method(packing_);
  if (max_threads_ < 0) throw InvalidArgument("--max-threads must be >= 0, got " + std::to_string(max_threads_));
  if (iterations_ < 0) throw InvalidArgument("--iterations must be >= 0, got " + std::to_string(iterations_));
  for (int n : split_table_) {
    if (n < 1) throw InvalidArgument("--split-table entries must be >= 1, got " + std::to_string(n));
  }
  if (!(split_tolerance_ >= 0.0)) {
    throw InvalidArgument("--split-tolerance must be >= 0, got " + std::to_string(split_tolerance_));
  }
}

namespace {

// Seed 000's Table 3 for this class: how many points splitting for N groups costs, and how well
// whole zones (NPB bin packing) and split blocks (LPT) balance N ranks.
void print_split_table(std::ostream& os, const ZoneLayout& layout, const std::vector<int>& groups, double tol) {
  char line[200];
  os << " Zone splitting (" << layout.num_zones() << " zones, " << static_cast<long long>(layout.total_points())
     << " points; tolerance " << tol << "):\n";
  os << "   groups  blocks  total points (M)  extra %  imbalance split  imbalance whole zones\n";
  for (int n : groups) {
    const ZoneSplit s = split_zones(layout, n, tol);
    std::string whole = "-";
    if (n <= layout.num_zones()) whole = std::to_string(ZonePartition(layout, n).imbalance());
    std::snprintf(line, sizeof line, "   %6d  %6zu  %16.3f  %7.2f  %15.3f  %s\n", n, s.blocks.size(),
                  s.total_points / 1e6, 100.0 * s.extra_fraction(), s.imbalance, whole.c_str());
    os << line;
  }
  os << "\n";
}

}  // namespace

ResultRecord MzApp::run(AppContext& ctx) {
  const std::string path = data_file_.empty() ? verification_file_path() : data_file_;
  const ClassParams p = load_class_params(load_json_file(path), benchmark_, problem_class_);
  const ZoneLayout layout(p.geometry);
  const int nranks = ctx.env.size();
  const int rank = ctx.env.rank();

  ZonePartitionOptions po;
  po.method = parse_packing_method(packing_);
  po.threads_per_rank = ctx.env.threads();
  po.balance_threads = balance_threads_;
  po.max_threads = max_threads_;
  const ZonePartition partition(layout, nranks, po);

  MzOptions mo;
  mo.niter = iterations_;
  mo.perturb = perturb_;
  std::ostream* log = rank == 0 ? &std::cout : nullptr;
  const int niter = iterations_ > 0 ? iterations_ : p.niter;
  if (rank == 0) {
    print_header(std::cout, p, niter, nranks, partition.total_threads());
    std::cout << " Zone-rank map (" << to_string(po.method) << " packing, load imbalance "
              << partition.imbalance() << ", calculated speedup " << partition.speedup() << "):\n"
              << partition << "\n";
  }
  ZoneSplit split;
  if (split_report_) {
    split = split_zones(layout, nranks, split_tolerance_);
    if (rank == 0) {
      std::cout << " Zone splitting for " << nranks << " ranks: " << split.blocks.size() << " blocks ("
                << split.splits << " cuts), " << static_cast<long long>(split.total_points) << " points vs "
                << static_cast<long long>(split.original_points) << " unsplit (+" << 100.0 * split.extra_fraction()
                << "%), LPT imbalance " << split.imbalance << " (the solver runs on unsplit zones)\n\n";
    }
  }

  if (!split_table_.empty() && rank == 0) print_split_table(std::cout, layout, split_table_, split_tolerance_);
  // The class fixes the iterations (verification needs them), so --min-time repeats the whole
  // benchmark: initialise, time the loop, verify; every repetition must verify. r.seconds is the
  // slowest rank's, the same on all ranks, so all take the same decision.
  const bool fixed = iterations_option_->count() > 0;
  const double min_time_s = fixed ? 0.0 : ctx.min_time_s;
  MzResult r;
  double total_s = 0.0, exchange_s = 0.0, ops = 0.0;
  std::vector<double> repetition_s;
  int repetitions = 0;
  bool all_verified = true;
  do {
    r = run_mz(p, layout, partition, ctx.env.world(), mo, log);
    // This rank's own times, so the framework's imbalance sees rank differences.
    ctx.metrics.add("zone_solve", PhaseKind::computation, r.local_seconds - r.local_exchange_seconds);
    ctx.metrics.add("zone_exchange", PhaseKind::communication, r.local_exchange_seconds);
    total_s += r.seconds;
    repetition_s.push_back(r.seconds);
    exchange_s += r.exchange_seconds;
    ops += r.mops * r.seconds;  // Mop of this repetition
    all_verified = all_verified && r.verification.passed;
    ++repetitions;
    mo.progress = false;  // one set of " Time step" lines is enough
  } while (total_s < min_time_s && all_verified);
  r.seconds = total_s;
  r.exchange_seconds = exchange_s;
  r.mops = total_s > 0.0 ? ops / total_s : 0.0;
  if (rank == 0) {
    if (repetitions > 1)
      std::cout << " Repeated " << repetitions << " times to reach --min-time " << min_time_s << " s; "
                << (all_verified ? "every repetition verified" : "a repetition FAILED verification")
                << "; time and Mop/s below are over all repetitions\n";
    print_report(std::cout, p, r, nranks, partition.total_threads());
  }

  ResultRecord rec;
  rec.app = name();
  rec.problem = "class " + p.problem_class;
  rec.time_s = r.seconds;
  rec.rate = r.mops;
  rec.rate_unit = "Mop/s";
  // The last repetition's verification block is printed; a failure of any counts.
  rec.verified = all_verified;
  rec.timed_repetitions = repetitions;
  rec.repetitions_fixed = fixed;
  rec.min_time_s = ctx.min_time_s;
  rec.metrics = nlohmann::json{{"mops_total", r.mops},
                               {"mops_per_process", r.mops / nranks},
                               {"mops_per_thread", r.mops / partition.total_threads()},
                               {"iterations", r.niter},
                               {"repetitions", repetitions},
                               {"repetition_s", repetition_s},
                               {"exchange_s", r.exchange_seconds},
                               {"class", p.to_json()},
                               {"zones", layout.to_json()},
                               {"partition", partition.to_json()},
                               {"verification", r.verification.to_json()},
                               {"run_options", mo.to_json()}};
  if (split_report_) rec.metrics["split"] = split.to_json();
  return rec;
}

}  // namespace hympi::npb
