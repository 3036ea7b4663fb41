// NPB's IS printout: the banner, failed verifications, and c_print_results' block.
#include <cstdio>

#include "hympi/core/results_block.hpp"
#include "hympi/is/is.hpp"

namespace hympi::is {

void print_header(std::ostream& os, const IsClass& c, int nranks) {
  char line[160];
  os << "\n\n NAS Parallel Benchmarks (NPB3.4-MPI, hympi C++ port) - IS Benchmark\n\n";
  std::snprintf(line, sizeof line, " Size:  %lld  (class %s)\n", static_cast<long long>(c.total_keys()),
                c.name.c_str());
  os << line;
  std::snprintf(line, sizeof line, " Iterations:   %d\n", c.iterations);
  os << line;
  std::snprintf(line, sizeof line, " Number of processes:     %d\n\n", nranks);
  os << line;
}

void print_report(std::ostream& os, const IsClass& c, const IsSeries& series, int nranks, double min_time_s) {
  char line[200];
  const IsResult& r = series.total;
  for (const IsResult& run : series.runs) {
    for (std::size_t i = 0; i < run.partial_passed.size(); ++i) {
      if (run.partial_passed[i] == kTestKeys) continue;
      std::snprintf(line, sizeof line, " Failed partial verification: iteration %zu, %d of %d test keys ranked right\n",
                    i + 1, run.partial_passed[i], kTestKeys);
      os << line;
    }
    if (!run.full.passed) {
      std::snprintf(line, sizeof line,
                    " Full_verify: %lld keys out of sort; %lld keys (expected %lld), checksum %llu\n",
                    static_cast<long long>(run.full.out_of_order), static_cast<long long>(run.full.keys),
                    static_cast<long long>(c.total_keys()), static_cast<unsigned long long>(run.full.checksum));
      os << line;
    }
  }
  print_repetitions(os, series.runs.size(), series.all_verified, min_time_s);
  os << "\n\n IS Benchmark Completed\n";
  print_result_class(os, c.name);
  print_result_line(os, "Size", result_count(c.total_keys()));
  print_result_totals(os, {.iterations = r.iterations, .seconds = r.seconds, .mops = r.mops, .operation = "keys ranked"},
                      nranks);
  print_result_verdict(os, series.all_verified ? "SUCCESSFUL" : "UNSUCCESSFUL");
  os << std::flush;
}

}  // namespace hympi::is
