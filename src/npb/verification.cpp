#include "hympi/npb/verification.hpp"

#include <cmath>
#include <cstdio>

namespace hympi::npb {

Verification verify(const ClassParams& p, int niter, double dt, const std::array<double, 5>& xcr,
                    const std::array<double, 5>& xce, double xci) {
  Verification v;
  v.xcr = xcr;
  v.xce = xce;
  v.xci = xci;
  v.reference_available = p.has_reference;
  if (!p.has_reference) return v;
  v.dt_ok = std::abs(dt - p.dt_ref) <= p.epsilon;
  v.niter_ok = niter == p.niter_ref;
  bool ok = v.dt_ok && v.niter_ok;
  // Written so that NaN fails: a comparison with NaN is false.
  for (int m = 0; m < 5; ++m) {
    v.xcr_diff[m] = std::abs((xcr[m] - p.xcr_ref[m]) / p.xcr_ref[m]);
    v.xce_diff[m] = std::abs((xce[m] - p.xce_ref[m]) / p.xce_ref[m]);
    if (!(v.xcr_diff[m] <= p.epsilon)) ok = false;
    if (!(v.xce_diff[m] <= p.epsilon)) ok = false;
  }
  if (p.benchmark == Benchmark::lu) {
    v.xci_diff = std::abs((xci - p.xci_ref) / p.xci_ref);
    if (!(v.xci_diff <= p.epsilon)) ok = false;
  }
  v.passed = ok;
  return v;
}

void Verification::print(std::ostream& os, const ClassParams& p) const {
  char line[160];
  os << " Verification being performed for class " << p.problem_class << "\n";
  if (!reference_available) {
    os << " No reference values for this class\n";
    return;
  }
  std::snprintf(line, sizeof line, " accuracy setting for epsilon = %20.13E\n", p.epsilon);
  os << line;
  if (!dt_ok) {
    std::snprintf(line, sizeof line, " DT does not match the reference value of %15.8E\n", p.dt_ref);
    os << line;
  } else if (!niter_ok) {
    std::snprintf(line, sizeof line, " NITER does not match the reference value of %5d\n", p.niter_ref);
    os << line;
  }
  auto block = [&](const char* title, const std::array<double, 5>& val, const std::array<double, 5>& ref,
                   const std::array<double, 5>& diff) {
    os << " Comparison of " << title << "\n";
    for (int m = 0; m < 5; ++m) {
      const bool good = diff[m] <= p.epsilon;
      std::snprintf(line, sizeof line, " %s %2d%20.13E%20.13E%20.13E\n", good ? "         " : "FAILURE: ", m + 1,
                    val[m], ref[m], diff[m]);
      os << line;
    }
  };
  block("RMS-norms of residual", xcr, p.xcr_ref, xcr_diff);
  block("RMS-norms of solution error", xce, p.xce_ref, xce_diff);
  if (p.benchmark == Benchmark::lu) {
    os << " Comparison of surface integral\n";
    std::snprintf(line, sizeof line, " %s    %20.13E%20.13E%20.13E\n", xci_diff <= p.epsilon ? "         " : "FAILURE: ",
                  xci, p.xci_ref, xci_diff);
    os << line;
  }
  os << (passed ? " Verification Successful\n" : " Verification failed\n");
}

nlohmann::json Verification::to_json() const {
  nlohmann::json j{{"passed", passed},     {"reference_available", reference_available},
                   {"dt_ok", dt_ok},       {"niter_ok", niter_ok},
                   {"xcr", xcr},           {"xce", xce},
                   {"xcr_diff", xcr_diff}, {"xce_diff", xce_diff}};
  j["xci"] = xci;
  j["xci_diff"] = xci_diff;
  return j;
}

}  // namespace hympi::npb
