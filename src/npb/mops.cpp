#include "hympi/npb/mops.hpp"

#include "hympi/core/error.hpp"

#include <regex>

namespace hympi::npb {

MopsFormula MopsFormula::parse(const std::string& text, bool single_precision_average) {
  MopsFormula f;
  f.single_precision_average = single_precision_average;
  // Terms look like "+ 3478.8*n3" or "- 144010.0"; anything else is rejected.
  static const std::regex term(R"(\s*([+-]?)\s*([0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?)\s*(?:\*\s*(n3|nsur|navg))?\s*)");
  std::string rest = text;
  std::smatch m;
  bool any = false;
  while (!rest.empty() && std::regex_search(rest, m, term, std::regex_constants::match_continuous)) {
    if (m.length(0) == 0) break;
    const double value = (m[1] == "-" ? -1.0 : 1.0) * std::stod(m[2]);
    const std::string var = m[3];
    if (var == "n3") f.n3 += value;
    else if (var == "nsur") f.nsur += value;
    else if (var == "navg") f.navg += value;
    else f.constant += value;
    rest = m.suffix();
    any = true;
  }
  if (!any || !rest.empty()) throw InvalidArgument("cannot parse Mop/s formula '" + text + "'");
  return f;
}

double mops_total(const MopsFormula& formula, const ZoneGrid& grid, int niter, double seconds) {
  if (seconds <= 0.0) return 0.0;
  double sum = 0.0;
  for (const auto& z : grid.zones()) {
    const double n3 = double(z.nx) * z.ny * z.nz;
    double navg, nsur;
    if (formula.single_precision_average) {
      // BT/SP: Fortran divides the integer sums by the REAL literal 3.0, i.e. in single precision.
      navg = double(float(z.nx + z.ny + z.nz) / 3.0f);
      nsur = double(float(z.nx * z.ny + z.nx * z.nz + z.ny * z.nz) / 3.0f);
    } else {
      navg = (z.nx + z.ny + z.nz) / 3.0;
      nsur = (z.nx * z.ny + z.nx * z.nz + z.ny * z.nz) / 3.0;
    }
    sum += double(niter) * 1.0e-6 * (formula.n3 * n3 + formula.nsur * nsur + formula.navg * navg + formula.constant) /
           seconds;
  }
  return sum;
}

}  // namespace hympi::npb
