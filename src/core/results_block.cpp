#include "hympi/core/results_block.hpp"

#include <cstdio>

namespace hympi {

namespace {
// The values of the reference's block start 13 columns after the '=' and fill 12 (25 in all).
constexpr std::size_t kValueColumns = 25;

std::string right_aligned(std::string_view text) {
  std::string out(text.size() < kValueColumns ? kValueColumns - text.size() : 0, ' ');
  out += text;
  return out;
}

std::string result_real(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "             %12.2f", value);
  return text;
}
}  // namespace

void print_result_line(std::ostream& os, std::string_view key, std::string_view value) {
  std::string line = " ";
  line += key;
  line.resize(16, ' ');
  line += " =";
  line += value;
  os << line << '\n';
}

std::string result_count(long long value) {
  char text[64];
  std::snprintf(text, sizeof text, "             %12lld", value);
  return text;
}

void print_result_class(std::ostream& os, std::string_view problem_class) {
  print_result_line(os, "Class", std::string(24, ' ') + std::string(problem_class));
}

void print_result_totals(std::ostream& os, const ResultTotals& totals, int processes, int threads) {
  print_result_line(os, "Iterations", result_count(totals.iterations));
  print_result_line(os, "Time in seconds", result_real(totals.seconds));
  print_result_line(os, "Total processes", result_count(processes));
  if (threads > 0) print_result_line(os, "Total threads", result_count(threads));
  print_result_line(os, "Mop/s total", result_real(totals.mops));
  print_result_line(os, "Mop/s/process", result_real(totals.mops / processes));
  if (threads > 0) print_result_line(os, "Mop/s/thread", result_real(totals.mops / threads));
  print_result_line(os, "Operation type", right_aligned(totals.operation));
}

void print_result_verdict(std::ostream& os, std::string_view verdict, std::string_view note) {
  std::string value = right_aligned(verdict);
  if (!note.empty()) value += " " + std::string(note);
  print_result_line(os, "Verification", value);
}

}  // namespace hympi
