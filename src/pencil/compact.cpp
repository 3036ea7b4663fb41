// Compact derivatives and the batched Thomas solver (hot: every substep runs them on every line).
#include "hympi/pencil/compact.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi::pencil {

namespace {

// Lines solved together: the inner loops run across a block's lines, so the contiguous lines of the planes
// layout vectorise and a block of strided pencil lines stays in cache between the two sweeps.
constexpr long kBlock = 32;

void check_span(std::size_t size, const LineSet& lines, const char* what) {
  if (size < lines.extent())
    throw InvalidArgument(std::string(what) + " holds " + std::to_string(size) + " doubles, the lines need " +
                          std::to_string(lines.extent()));
}

/// The forward and backward sweeps over `nb` lines starting at p (line stride ls, point stride ps).
void thomas_block(double* p, long nb, long n, long ls, long ps, const double* sub, const double* inv,
                  const double* upper) {
  for (long b = 0; b < nb; ++b) p[b * ls] *= inv[0];
  for (long i = 1; i < n; ++i) {
    double* row = p + i * ps;
    const double* prev = row - ps;
    const double s = sub[i], v = inv[i];
    for (long b = 0; b < nb; ++b) row[b * ls] = (row[b * ls] - s * prev[b * ls]) * v;
  }
  for (long i = n - 2; i >= 0; --i) {
    double* row = p + i * ps;
    const double* next = row + ps;
    const double u = upper[i];
    for (long b = 0; b < nb; ++b) row[b * ls] -= u * next[b * ls];
  }
}

}  // namespace

std::size_t LineSet::extent() const noexcept {
  if (count <= 0 || points <= 0) return 0;
  return static_cast<std::size_t>((count - 1) * line_stride + (points - 1) * point_stride + 1);
}

Tridiagonal::Tridiagonal(std::vector<double> sub, std::vector<double> diag, std::vector<double> sup)
    : sub_(std::move(sub)) {
  const std::size_t n = diag.size();
  if (n < 2 || sub_.size() != n || sup.size() != n)
    throw InvalidArgument("tridiagonal matrix needs three diagonals of one size >= 2, got " +
                          std::to_string(sub_.size()) + ", " + std::to_string(n) + ", " + std::to_string(sup.size()));
  inv_pivot_.resize(n);
  upper_.resize(n);
  double previous_upper = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double pivot = diag[i] - (i == 0 ? 0.0 : sub_[i] * previous_upper);
    if (pivot == 0 || !std::isfinite(pivot))
      throw InvalidArgument("tridiagonal matrix is singular without pivoting at row " + std::to_string(i));
    inv_pivot_[i] = 1.0 / pivot;
    upper_[i] = i + 1 < n ? sup[i] / pivot : 0.0;
    previous_upper = upper_[i];
  }
}

void Tridiagonal::solve(std::span<double> data, const LineSet& lines) const {
  if (lines.points != size())
    throw InvalidArgument("lines of " + std::to_string(lines.points) + " points for a tridiagonal matrix of " +
                          std::to_string(size()) + " rows");
  check_span(data.size(), lines, "tridiagonal right-hand side");
  for (long l0 = 0; l0 < lines.count; l0 += kBlock)
    thomas_block(data.data() + l0 * lines.line_stride, std::min(kBlock, lines.count - l0), size(),
                 lines.line_stride, lines.point_stride, sub_.data(), inv_pivot_.data(), upper_.data());
}

namespace {

void check_derivative(int order, long n, double h) {
  if (order != 1 && order != 2)
    throw InvalidArgument("compact derivative order must be 1 or 2, got " + std::to_string(order));
  if (n < 6) throw InvalidArgument("compact derivative needs >= 6 points, got " + std::to_string(n));
  if (!(h > 0) || !std::isfinite(h)) throw InvalidArgument("grid spacing must be > 0, got " + std::to_string(h));
}

Tridiagonal compact_matrix(int order, long n, double h) {
  check_derivative(order, n, h);
  const auto size = static_cast<std::size_t>(n);
  const double off = order == 1 ? 0.25 : 0.1;
  const double edge = order == 1 ? 3.0 : 0.0;
  std::vector<double> sub(size, off), diag(size, 1.0), sup(size, off);
  sup[0] = edge;
  sub[size - 1] = edge;
  return {std::move(sub), std::move(diag), std::move(sup)};
}

}  // namespace

CompactDerivative::CompactDerivative(int order, long n, double h)
    : order_(order), n_(n), h_(h), matrix_(compact_matrix(order, n, h)) {}

double CompactDerivative::max_eigenvalue_h() const noexcept { return order_ == 1 ? std::sqrt(3.0) : 6.0; }

void CompactDerivative::apply(std::span<const double> f, std::span<double> out, const LineSet& lines) const {
  if (lines.points != n_)
    throw InvalidArgument("lines of " + std::to_string(lines.points) + " points for a derivative on " +
                          std::to_string(n_));
  check_span(f.size(), lines, "derivative input");
  check_span(out.size(), lines, "derivative output");
  const long n = n_, ls = lines.line_stride, ps = lines.point_stride;
  for (long l0 = 0; l0 < lines.count; l0 += kBlock) {
    const long nb = std::min(kBlock, lines.count - l0);
    const double* in = f.data() + l0 * ls;
    double* o = out.data() + l0 * ls;
    const auto at = [&](long i, long b) { return in[i * ps + b * ls]; };
    // The interior rows, along the lines where they are contiguous (pencils), else across them (planes).
    const auto interior = [&](auto row) {
      if (ps == 1) {
        for (long b = 0; b < nb; ++b)
          for (long i = 1; i < n - 1; ++i) o[i + b * ls] = row(i, b);
      } else {
        for (long i = 1; i < n - 1; ++i)
          for (long b = 0; b < nb; ++b) o[i * ps + b * ls] = row(i, b);
      }
    };
    if (order_ == 1) {
      const double a = 0.75 / h_, e = 1.0 / h_;
      for (long b = 0; b < nb; ++b) {
        o[b * ls] = e * (-17.0 / 6.0 * at(0, b) + 1.5 * at(1, b) + 1.5 * at(2, b) - at(3, b) / 6.0);
        o[(n - 1) * ps + b * ls] =
            e * (17.0 / 6.0 * at(n - 1, b) - 1.5 * at(n - 2, b) - 1.5 * at(n - 3, b) + at(n - 4, b) / 6.0);
      }
      interior([&](long i, long b) { return a * (at(i + 1, b) - at(i - 1, b)); });
    } else {
      const double a = 1.2 / (h_ * h_), e = 1.0 / (12.0 * h_ * h_);
      const auto edge = [&](long i, long step, long b) {
        return e * (45.0 * at(i, b) - 154.0 * at(i + step, b) + 214.0 * at(i + 2 * step, b) -
                    156.0 * at(i + 3 * step, b) + 61.0 * at(i + 4 * step, b) - 10.0 * at(i + 5 * step, b));
      };
      for (long b = 0; b < nb; ++b) {
        o[b * ls] = edge(0, 1, b);
        o[(n - 1) * ps + b * ls] = edge(n - 1, -1, b);
      }
      interior([&](long i, long b) { return a * (at(i + 1, b) - 2.0 * at(i, b) + at(i - 1, b)); });
    }
    matrix_.solve(out.subspan(static_cast<std::size_t>(l0 * ls)), LineSet{nb, n, ls, ps});
  }
}

}  // namespace hympi::pencil
