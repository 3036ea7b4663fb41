#pragma once
// NPB-MZ's Mop/s: the reference's per-zone operation-count formulas summed over the zones.
#include "hympi/npb/zone_grid.hpp"

#include <string>

namespace hympi::npb {

/// Mop/s coefficients per zone and iteration: a*n3 + b*nsur + c*navg + d.
struct MopsFormula {
  double n3 = 0.0, nsur = 0.0, navg = 0.0, constant = 0.0;
  /// NPB BT/SP divide by a single-precision 3.0 when averaging; LU uses double.
  bool single_precision_average = false;
  /// Parses "3478.8*n3 - 17655.7*nsur + 28023.7*navg"; throws InvalidArgument on other text.
  [[nodiscard]] static MopsFormula parse(const std::string& text, bool single_precision_average);
};

/// Reference Mop/s for `niter` iterations over all zones of `grid` in `seconds` (0 when seconds <= 0).
[[nodiscard]] double mops_total(const MopsFormula& formula, const ZoneGrid& grid, int niter, double seconds);

}  // namespace hympi::npb
