#include "hympi/npb/mz_report.hpp"

#include <cctype>
#include <cstdio>
#include <string>

#include "hympi/core/results_block.hpp"

namespace hympi::npb {

namespace {
// "BT-MZ": the benchmark as the reference's banners spell it.
std::string upper_name(Benchmark b) {
  std::string upper = to_string(b);
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return upper;
}
}  // namespace

void print_header(std::ostream& os, const ClassParams& p, int niter, int nranks, int total_threads) {
  const std::string upper = upper_name(p.benchmark);
  char line[160];
  os << "\n\n NAS Parallel Benchmarks (NPB3.4-MZ MPI+OpenMP, hympi C++ port) - " << upper << " Benchmark\n\n";
  std::snprintf(line, sizeof line, " Number of zones: %3d x %3d\n", p.geometry.x_zones, p.geometry.y_zones);
  os << line;
  std::snprintf(line, sizeof line, " Total mesh size: %5d x %5d x %3d\n", p.geometry.gx_size, p.geometry.gy_size,
                p.geometry.gz_size);
  os << line;
  std::snprintf(line, sizeof line, " Iterations: %3d    dt: %10.6f\n", niter, p.dt);
  os << line;
  std::snprintf(line, sizeof line, " Number of active processes: %6d\n", nranks);
  os << line;
  std::snprintf(line, sizeof line, " Total number of threads: %6d  (%5.1f threads/process)\n\n", total_threads,
                double(total_threads) / nranks);
  os << line;
}

void print_report(std::ostream& os, const ClassParams& p, const MzResult& r, int nranks, int total_threads) {
  const std::string upper = upper_name(p.benchmark);
  char line[200];
  r.verification.print(os, p);
  os << "\n\n " << upper << " Benchmark Completed.\n";
  print_result_class(os, p.problem_class);
  std::snprintf(line, sizeof line, "             %5d x%5d x%4d", p.geometry.gx_size, p.geometry.gy_size,
                p.geometry.gz_size);
  print_result_line(os, "Size", line);
  std::snprintf(line, sizeof line, "                   %5d x%5d", p.geometry.x_zones, p.geometry.y_zones);
  print_result_line(os, "Zones", line);
  print_result_totals(os, {.iterations = r.niter, .seconds = r.seconds, .mops = r.mops, .operation = "floating point"},
                      nranks, total_threads);
  if (!r.verification.reference_available) {
    print_result_verdict(os, "UNVERIFIED", "(no reference for this class)");
  } else {
    print_result_verdict(os, r.verification.passed ? "SUCCESSFUL" : "UNSUCCESSFUL");
  }
  os << std::flush;
}

void print_partition(std::ostream& os, const ZonePartition& partition) {
  os << " Zone-rank map (" << to_string(partition.options().method) << " packing, load imbalance "
     << partition.imbalance() << ", calculated speedup " << partition.speedup() << "):\n"
     << partition << "\n";
}

void print_split_summary(std::ostream& os, const ZoneSplit& split) {
  os << " Zone splitting for " << split.nranks << " ranks: " << split.blocks.size() << " blocks (" << split.splits
     << " cuts), " << static_cast<long long>(split.total_points) << " points vs "
     << static_cast<long long>(split.original_points) << " unsplit (+" << 100.0 * split.extra_fraction()
     << "%), LPT imbalance " << split.imbalance << " (the solver runs on unsplit zones)\n\n";
}

void print_split_table(std::ostream& os, const ZoneGrid& grid, const std::vector<int>& groups, double tolerance) {
  char line[200];
  os << " Zone splitting (" << grid.num_zones() << " zones, " << static_cast<long long>(grid.total_points())
     << " points; tolerance " << tolerance << "):\n";
  os << "   groups  blocks  total points (M)  extra %  imbalance split  imbalance whole zones\n";
  for (int n : groups) {
    const ZoneSplit s = split_zones(grid, n, tolerance);
    std::string whole = "-";
    if (n <= grid.num_zones()) whole = std::to_string(ZonePartition(grid, n).imbalance());
    std::snprintf(line, sizeof line, "   %6d  %6zu  %16.3f  %7.2f  %15.3f  %s\n", n, s.blocks.size(),
                  s.total_points / 1e6, 100.0 * s.extra_fraction(), s.imbalance, whole.c_str());
    os << line;
  }
  os << "\n";
}

}  // namespace hympi::npb
