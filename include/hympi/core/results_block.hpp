#pragma once
// The closing block of an NPB run (" Class           = ...", " Mop/s total     = ..."), laid out as the reference's
// print_results lays it out. IS and the multi-zone benchmarks print it through these functions, so the columns
// that scripts written for the reference read stay the same in every benchmark.
#include <ostream>
#include <string>
#include <string_view>

namespace hympi {

/// One line of the block: the key in the reference's 15 columns, " =", then `value` as the caller laid it out.
void print_result_line(std::ostream& os, std::string_view key, std::string_view value);

/// `value` in the reference's integer column (%12d, 13 columns after the '=').
[[nodiscard]] std::string result_count(long long value);

/// The Class line.
void print_result_class(std::ostream& os, std::string_view problem_class);

/// What a run measured, for the lines from Iterations to Operation type.
struct ResultTotals {
  int iterations = 0;
  double seconds = 0.0;
  double mops = 0.0;
  /// What one Mop counts: "keys ranked", "floating point".
  std::string_view operation;
};
/// The lines from Iterations to Operation type, which every benchmark prints alike, for a run on `processes`
/// ranks of `threads` OpenMP threads each (0 for a benchmark without threads: its block has no thread lines).
void print_result_totals(std::ostream& os, const ResultTotals& totals, int processes, int threads = 0);

/// The Verification line: `verdict` ("SUCCESSFUL", "UNSUCCESSFUL", "UNVERIFIED") in the reference's column, then
/// `note` when there is one.
void print_result_verdict(std::ostream& os, std::string_view verdict, std::string_view note = {});

}  // namespace hympi
