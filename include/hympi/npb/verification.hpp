#pragma once
// NPB-MZ's verification rule (verify.f): the residual and error norms (and LU's surface
// integral) against the reference values of the class.
#include "hympi/npb/class_params.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <ostream>

namespace hympi::npb {

/// Outcome of the reference verification rule.
struct Verification {
  bool passed = false;
  bool reference_available = false;
  bool dt_ok = false;
  bool niter_ok = false;
  std::array<double, 5> xcr{}, xce{}, xcr_diff{}, xce_diff{};
  double xci = 0.0, xci_diff = 0.0;
  /// The verify.f style block: references, values, relative differences, FAILURE marks.
  void print(std::ostream& os, const ClassParams& p) const;
  /// Every field as JSON, for result records.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Applies the reference rule: dt and iterations match, every relative difference <= epsilon, no
/// NaN; never throws (a class without references gives reference_available = false, passed = false).
[[nodiscard]] Verification verify(const ClassParams& p, int niter, double dt, const std::array<double, 5>& xcr,
                                  const std::array<double, 5>& xce, double xci);

}  // namespace hympi::npb
