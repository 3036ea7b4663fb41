#pragma once
// Lines of a zone solved side by side, one per SIMD lane (SP's scalar pentadiagonal and BT's block-tridiagonal
// line solves). The elimination along one line is a single dependency chain, so one line at a time leaves the
// vector units idle; neighbouring lines are independent and do the same arithmetic, so a group of them runs at
// the cost of one. Private to src/npb (sp.cpp, bt.cpp).
#include <algorithm>
#include <cstddef>

namespace hympi::npb {
namespace line_lanes {

// Four doubles fill an AVX2 register.
constexpr int kLanes = 4;
// Built without AVX (the sanitizer build has no -march), GCC warns that passing Lanes by value changes the ABI;
// every function taking or returning Lanes is always inlined (here, and file-local in sp.cpp and bt.cpp), so no
// call crosses an ABI boundary.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef double Lanes __attribute__((vector_size(kLanes * sizeof(double))));

// Where each lane's line starts in a field; lanes past the group's last line repeat it, so they
// compute (and store) the same values again instead of needing masks.
struct LaneOffsets {
  std::ptrdiff_t at[kLanes];
};

[[gnu::always_inline]] inline Lanes gather(const double* f, const LaneOffsets& o, std::ptrdiff_t q) {
  Lanes v;
  for (int l = 0; l < kLanes; ++l) v[l] = f[o.at[l] + q];
  return v;
}

[[gnu::always_inline]] inline void scatter(double* f, const LaneOffsets& o, std::ptrdiff_t q, const Lanes& v) {
  for (int l = 0; l < kLanes; ++l) f[o.at[l] + q] = v[l];
}

// Offsets of the group of lines starting at line `first` of `count` (0-based), each lane
// `lane_stride` points after the previous, from point `base` of the first line.
inline LaneOffsets group_offsets(std::size_t base, int first, int count, std::ptrdiff_t lane_stride) {
  LaneOffsets o;
  for (int l = 0; l < kLanes; ++l) o.at[l] = std::ptrdiff_t(base) + std::min(first + l, count - 1) * lane_stride;
  return o;
}

// The offsets of the same lines' first points in a field of five doubles a point.
inline LaneOffsets interleaved(const LaneOffsets& o) {
  LaneOffsets o5;
  for (int l = 0; l < kLanes; ++l) o5.at[l] = 5 * o.at[l];
  return o5;
}

}  // namespace line_lanes
}  // namespace hympi::npb
