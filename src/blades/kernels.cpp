#include "hympi/blades/kernels.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <string>

#include "hympi/core/checksum.hpp"
#include "hympi/core/error.hpp"

namespace hympi::blades {

Range block_range(long n, int parts, int index) {
  if (n < 0) throw InvalidArgument("cannot split " + std::to_string(n) + " items");
  if (parts < 1) throw InvalidArgument("cannot split into " + std::to_string(parts) + " parts");
  if (index < 0 || index >= parts)
    throw InvalidArgument("part " + std::to_string(index) + " is outside [0, " + std::to_string(parts) + ")");
  const long base = n / parts, extra = n % parts;
  const long begin = index * base + std::min<long>(index, extra);
  return {begin, begin + base + (index < extra ? 1 : 0)};
}

int block_owner(long n, int parts, long item) {
  if (parts < 1) throw InvalidArgument("cannot split into " + std::to_string(parts) + " parts");
  if (item < 0 || item >= n)
    throw InvalidArgument("item " + std::to_string(item) + " is outside [0, " + std::to_string(n) + ")");
  const long base = n / parts, extra = n % parts;
  // The first `extra` parts hold base + 1 items each, the rest base.
  const long long_part_items = extra * (base + 1);
  if (item < long_part_items) return static_cast<int>(item / (base + 1));
  return static_cast<int>(extra + (item - long_part_items) / base);
}

LineSolver::LineSolver(long points, float c) : c_(c) {
  if (points < 3) throw InvalidArgument("a line needs >= 3 points (two Dirichlet ends), got " + std::to_string(points));
  if (!(c >= 0.0F) || !std::isfinite(c)) throw InvalidArgument("line coupling must be >= 0, got " + std::to_string(c));
  const auto unknowns = static_cast<std::size_t>(points - 2);
  inverse_.resize(unknowns);
  ratio_.resize(unknowns);
  const float diagonal = 1.0F + 2.0F * c;
  float pivot = diagonal;
  for (std::size_t i = 0; i < unknowns; ++i) {
    if (i > 0) pivot = diagonal - c * ratio_[i - 1];
    inverse_[i] = 1.0F / pivot;
    ratio_[i] = c * inverse_[i];
  }
}

void LineSolver::solve(std::span<float> rhs, std::span<float> line) const noexcept {
  const std::size_t m = inverse_.size();
  float* __restrict r = rhs.data() + 1;
  float* __restrict x = line.data() + 1;
  const float* __restrict inv = inverse_.data();
  const float* __restrict ratio = ratio_.data();
  // The Dirichlet ends enter the first and last rows (with one unknown, both enter the same row, left first).
  r[0] += c_ * line[0];
  r[m - 1] += c_ * line[m + 1];
  r[0] *= inv[0];
  for (std::size_t i = 1; i < m; ++i) r[i] = (r[i] + c_ * r[i - 1]) * inv[i];
  x[m - 1] = r[m - 1];
  for (std::size_t i = m - 1; i-- > 0;) x[i] = r[i] + ratio[i] * x[i + 1];
}

Interpolation Interpolation::for_offset(double offset) {
  if (!std::isfinite(offset) || std::abs(offset) > 1.0)
    throw InvalidArgument("interpolation offset must be within [-1, 1] J cells, got " + std::to_string(offset));
  const double a = std::abs(offset);
  return {static_cast<float>(1.0 - a), static_cast<float>(a), offset < 0 ? -1 : 1};
}

void interpolate_row(const Interpolation& w, std::span<const float> a, std::span<const float> b,
                     std::span<float> ghost) noexcept {
  const float* __restrict pa = a.data();
  const float* __restrict pb = b.data();
  float* __restrict out = ghost.data();
  const float near = w.near, far = w.far;
  const std::size_t n = ghost.size();
  for (std::size_t i = 0; i < n; ++i) out[i] = near * pa[i] + far * pb[i];
}

void explicit_row(const StencilRows& rows, float cy, float cz, float source, std::span<const float> shape_x,
                  std::span<float> rhs) noexcept {
  const float* __restrict c = rows.centre.data();
  const float* __restrict jm = rows.j_minus.data();
  const float* __restrict jp = rows.j_plus.data();
  const float* __restrict km = rows.k_minus.data();
  const float* __restrict kp = rows.k_plus.data();
  const float* __restrict sx = shape_x.data();
  float* __restrict out = rhs.data();
  const std::size_t n = rhs.size();
  for (std::size_t i = 0; i < n; ++i) {
    const float twice = 2.0F * c[i];
    out[i] = c[i] + cy * ((jm[i] + jp[i]) - twice) + cz * ((km[i] + kp[i]) - twice) + source * sx[i];
  }
}

std::uint64_t row_checksum(std::span<const float> row, std::uint64_t first_index) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < row.size(); ++i)
    sum += element_hash(first_index + i, std::bit_cast<std::uint32_t>(row[i]));
  return sum;
}

}  // namespace hympi::blades
