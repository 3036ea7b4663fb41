#pragma once
// Index boxes of a structured grid: [low, high) per axis.
#include <algorithm>
#include <array>
#include <ostream>

namespace hympi {

/// A box of grid indices, half-open: low[d] <= i < high[d].
struct Box3 {
  std::array<long, 3> low{0, 0, 0};
  std::array<long, 3> high{0, 0, 0};

  /// Extent per axis.
  [[nodiscard]] std::array<long, 3> size() const { return {high[0] - low[0], high[1] - low[1], high[2] - low[2]}; }
  /// Number of points (0 for an empty box).
  [[nodiscard]] long count() const {
    const auto s = size();
    return empty() ? 0 : s[0] * s[1] * s[2];
  }
  [[nodiscard]] bool empty() const {
    return high[0] <= low[0] || high[1] <= low[1] || high[2] <= low[2];
  }
  /// The common part of two boxes (possibly empty).
  [[nodiscard]] Box3 intersect(const Box3& o) const {
    Box3 b;
    for (int d = 0; d < 3; ++d) {
      b.low[d] = std::max(low[d], o.low[d]);
      b.high[d] = std::min(high[d], o.high[d]);
    }
    return b;
  }
  bool operator==(const Box3&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const Box3& b) {
  return os << "[" << b.low[0] << "," << b.high[0] << ")x[" << b.low[1] << "," << b.high[1] << ")x[" << b.low[2]
            << "," << b.high[2] << ")";
}

}  // namespace hympi
