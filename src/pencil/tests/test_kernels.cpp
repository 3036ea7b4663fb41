// The pencil solver's kernels: the batched Thomas solver, the compact derivatives' order up to the boundary,
// the z transforms and the 2/3 rule's exact products.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <numbers>
#include <random>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/pencil/compact.hpp"
#include "hympi/pencil/spectral.hpp"

using namespace hympi::pencil;

namespace {

constexpr double kPi = std::numbers::pi;

/// Max |D f - f^(order)| over every point of lines sin(k x + phase) on [0, 1] with n points.
double derivative_error(int order, long n) {
  const double h = 1.0 / static_cast<double>(n - 1), k = 2 * kPi;
  const CompactDerivative d(order, n, h);
  std::vector<double> f(static_cast<std::size_t>(n)), out(f.size());
  for (long i = 0; i < n; ++i) f[static_cast<std::size_t>(i)] = std::sin(k * static_cast<double>(i) * h + 0.3);
  d.apply(f, out, LineSet{1, n, n, 1});
  double worst = 0;
  for (long i = 0; i < n; ++i) {
    const double x = k * static_cast<double>(i) * h + 0.3;
    const double exact = order == 1 ? k * std::cos(x) : -k * k * std::sin(x);
    worst = std::max(worst, std::abs(out[static_cast<std::size_t>(i)] - exact));
  }
  return worst;
}

}  // namespace

TEST(Tridiagonal, SolvesManyLinesInBothLayouts) {
  const long n = 9, lines = 37;  // more than one block of lines
  std::vector<double> sub(n, 0.3), diag(n, 1.0), sup(n, 0.2);
  sup[0] = 3.0;  // the first-derivative closure's coupling: not diagonally dominant
  const Tridiagonal a(sub, diag, sup);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> value(-1, 1);
  for (const bool contiguous_lines : {true, false}) {
    const LineSet set = contiguous_lines ? LineSet{lines, n, 1, lines} : LineSet{lines, n, n, 1};
    std::vector<double> x(set.extent()), b(set.extent());
    for (double& v : x) v = value(rng);
    for (long l = 0; l < lines; ++l)
      for (long i = 0; i < n; ++i) {
        const auto at = [&](long j) { return x[static_cast<std::size_t>(l * set.line_stride + j * set.point_stride)]; };
        double row = diag[static_cast<std::size_t>(i)] * at(i);
        if (i > 0) row += sub[static_cast<std::size_t>(i)] * at(i - 1);
        if (i + 1 < n) row += sup[static_cast<std::size_t>(i)] * at(i + 1);
        b[static_cast<std::size_t>(l * set.line_stride + i * set.point_stride)] = row;
      }
    a.solve(b, set);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(b[i], x[i], 1e-12) << "contiguous " << contiguous_lines;
  }
  EXPECT_THROW(a.solve(std::span<double>(), LineSet{1, n, n, 1}), hympi::InvalidArgument);
  EXPECT_THROW(Tridiagonal({0, 1}, {1, 1}, {1, 0}), hympi::InvalidArgument);  // second pivot 1 - 1 = 0
}

TEST(CompactDerivative, FourthOrderUpToTheBoundary) {
  for (const int order : {1, 2}) {
    const double coarse = derivative_error(order, 24), fine = derivative_error(order, 47);
    const double observed = std::log(coarse / fine) / std::log(2.0);
    EXPECT_GT(observed, 3.8) << "order " << order << ": errors " << coarse << " -> " << fine;
    EXPECT_LT(observed, 4.6) << "order " << order;  // not a sixth-order scheme by accident
  }
}

TEST(CompactDerivative, ExactOnQuarticsAndRejectsBadInput) {
  const long n = 11;
  const double h = 0.1;
  std::vector<double> f(n), out(n);
  for (long i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) * h;
    f[static_cast<std::size_t>(i)] = 1 - 2 * x + 3 * x * x - x * x * x + 0.5 * x * x * x * x;
  }
  CompactDerivative(1, n, h).apply(f, out, LineSet{1, n, n, 1});
  for (long i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) * h;
    EXPECT_NEAR(out[static_cast<std::size_t>(i)], -2 + 6 * x - 3 * x * x + 2 * x * x * x, 1e-11) << i;
  }
  CompactDerivative(2, n, h).apply(f, out, LineSet{1, n, n, 1});
  for (long i = 0; i < n; ++i) {
    const double x = static_cast<double>(i) * h;
    EXPECT_NEAR(out[static_cast<std::size_t>(i)], 6 - 6 * x + 6 * x * x, 1e-9) << i;
  }
  EXPECT_THROW(CompactDerivative(3, n, h), hympi::InvalidArgument);
  EXPECT_THROW(CompactDerivative(1, 5, h), hympi::InvalidArgument);
  EXPECT_THROW(CompactDerivative(2, n, 0.0), hympi::InvalidArgument);
  EXPECT_THROW(CompactDerivative(1, n, h).apply(f, out, LineSet{1, n - 1, n, 1}), hympi::InvalidArgument);
}

TEST(ZModes, TwoThirdsRule) {
  EXPECT_EQ(dealiased_modes(32, 14).kept, 11);  // k <= 10 < 32/3
  EXPECT_EQ(dealiased_modes(30, 14).kept, 10);  // k = 10 is not < 10
  EXPECT_EQ(dealiased_modes(30, 14).doubles(), 20);
  EXPECT_THROW((void)dealiased_modes(31, 14), hympi::InvalidArgument);
  EXPECT_THROW((void)dealiased_modes(12, 14), hympi::InvalidArgument);
  // Eleven modes of a 30-point line would let the product's mode 20 alias onto the kept mode 10.
  EXPECT_THROW(ZTransform(ZModes{30, 11}, 1), hympi::InvalidArgument);
}

TEST(ZTransform, RoundTripAndDerivative) {
  const ZModes modes = dealiased_modes(24, 14);
  const ZTransform z(modes, 3);
  ZTransform::Workspace ws = z.workspace();
  const long lines = 2, d = modes.doubles();
  std::vector<double> spectral(static_cast<std::size_t>(lines * d)), back(spectral.size());
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> value(-1, 1);
  for (long l = 0; l < lines; ++l)
    for (long zd = 0; zd < d; ++zd) spectral[static_cast<std::size_t>(l * d + zd)] = zd == 1 ? 0.0 : value(rng);
  z.to_physical(spectral, lines, ws, 0, false);
  z.to_spectral(ws, 0, lines, back);
  for (std::size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(back[i], spectral[i], 1e-14);
  // d/dz of the line's own modes, checked point by point against the series.
  z.to_physical(spectral, lines, ws, 1, true);
  const std::span<double> du = ws.real(1);
  for (long j = 0; j < modes.nz; ++j) {
    const double zj = 2 * kPi * static_cast<double>(j) / static_cast<double>(modes.nz);
    double exact = 0;
    for (long k = 1; k < modes.kept; ++k) {
      const std::complex<double> c(spectral[static_cast<std::size_t>(2 * k)],
                                   spectral[static_cast<std::size_t>(2 * k + 1)]);
      exact += 2 * (std::complex<double>(0, static_cast<double>(k)) * c *
                    std::exp(std::complex<double>(0, static_cast<double>(k) * zj)))
                       .real();
    }
    EXPECT_NEAR(du[static_cast<std::size_t>(j)], exact, 1e-12) << j;
  }
  // The unused third line of the batch is zero.
  for (long j = 0; j < modes.nz; ++j) EXPECT_EQ(ws.real(0)[static_cast<std::size_t>(2 * modes.nz + j)], 0.0);
}

TEST(ZTransform, DealiasedProductIsTheExactTruncatedConvolution) {
  const ZModes modes = dealiased_modes(30, 14);  // k = 0..9: products reach 18, aliases land on k >= 12
  const ZTransform z(modes, 1);
  ZTransform::Workspace ws = z.workspace();
  const long kept = modes.kept;
  std::vector<std::complex<double>> a(static_cast<std::size_t>(kept)), b(a.size());
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> value(-1, 1);
  for (long k = 0; k < kept; ++k) {
    a[static_cast<std::size_t>(k)] = {value(rng), k == 0 ? 0.0 : value(rng)};
    b[static_cast<std::size_t>(k)] = {value(rng), k == 0 ? 0.0 : value(rng)};
  }
  const auto pack = [&](const std::vector<std::complex<double>>& c) {
    std::vector<double> s(static_cast<std::size_t>(2 * kept));
    for (long k = 0; k < kept; ++k) {
      s[static_cast<std::size_t>(2 * k)] = c[static_cast<std::size_t>(k)].real();
      s[static_cast<std::size_t>(2 * k + 1)] = c[static_cast<std::size_t>(k)].imag();
    }
    return s;
  };
  z.to_physical(pack(a), 1, ws, 0, false);
  z.to_physical(pack(b), 1, ws, 1, false);
  for (long j = 0; j < modes.nz; ++j) ws.real(0)[static_cast<std::size_t>(j)] *= ws.real(1)[static_cast<std::size_t>(j)];
  std::vector<double> product(static_cast<std::size_t>(2 * kept));
  z.to_spectral(ws, 0, 1, product);
  // (a b)_k = sum over p + q = k of a_p b_q, with negative modes the conjugates of the positive ones.
  const auto mode = [&](const std::vector<std::complex<double>>& c, long k) {
    if (std::abs(k) >= kept) return std::complex<double>(0, 0);
    return k >= 0 ? c[static_cast<std::size_t>(k)] : std::conj(c[static_cast<std::size_t>(-k)]);
  };
  for (long k = 0; k < kept; ++k) {
    std::complex<double> exact(0, 0);
    for (long p = -kept + 1; p < kept; ++p) exact += mode(a, p) * mode(b, k - p);
    EXPECT_NEAR(product[static_cast<std::size_t>(2 * k)], exact.real(), 1e-13) << k;
    EXPECT_NEAR(product[static_cast<std::size_t>(2 * k + 1)], exact.imag(), 1e-13) << k;
  }
}
