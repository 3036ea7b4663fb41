#include "hympi/blades/problem.hpp"

#include <cmath>
#include <numbers>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi::blades {

namespace {

// The manufactured solution u = T(t) X(x) Y(y) Z(z): smooth, nonzero on the walls (so the Dirichlet values are
// tested), periodic over the ring in z, and changing in time (T) so the source is not a constant.
constexpr double kAmplitude = 0.5;  // T(t) = 1 + A sin(w t)
constexpr double kOmega = 20.0;
constexpr double kX = 1.7, kPhaseX = 0.4;  // X = sin(kX x + phase)
constexpr double kY = 2.3, kPhaseY = 0.3;  // Y = sin(kY y + phase)
// Explicit J and K coefficients: dt = kCourant hy^2 with hz = hy gives cy = cz = kCourant; the explicit update is
// a convex combination of its inputs while 2 (cy + cz) <= 1, which the error bound relies on.
constexpr double kCourant = 0.2;

}  // namespace

std::string to_string(InnerMode mode) { return mode == InnerMode::mpi ? "mpi" : "openmp"; }

InnerMode parse_inner(const std::string& text) {
  if (text == "openmp") return InnerMode::openmp;
  if (text == "mpi") return InnerMode::mpi;
  throw InvalidArgument("unknown --inner '" + text + "' (expected openmp or mpi)");
}

std::string Problem::text() const {
  return std::to_string(blades) + " blades " + std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + "x" +
         std::to_string(grid[2]);
}

void Problem::validate() const {
  // Each blade names its two ghost planes' messages by tag 2 b + side; MPI guarantees tags up to 32767.
  if (blades < 1 || blades > 16383)
    throw InvalidArgument("--blades must be within [1, 16383], got " + std::to_string(blades));
  if (grid[0] < 3) throw InvalidArgument("--grid I must be >= 3 (two walls and a point between), got " +
                                         std::to_string(grid[0]));
  if (grid[1] < 3) throw InvalidArgument("--grid J must be >= 3 (two walls and a point between), got " +
                                         std::to_string(grid[1]));
  if (grid[2] < 1) throw InvalidArgument("--grid K must be >= 1, got " + std::to_string(grid[2]));
  if (!std::isfinite(offset) || offset < 0.0 || offset > 1.0)
    throw InvalidArgument("--offset must be within [0, 1] J cells, got " + std::to_string(offset));
}

Levels resolve_levels(const Problem& problem, InnerMode mode, int ranks, int threads, int n2_option) {
  const long j = problem.grid[1];
  Levels out;
  if (mode == InnerMode::openmp) {
    if (n2_option != 1 && n2_option != threads)
      throw InvalidArgument("--n2 " + std::to_string(n2_option) + " does not apply to --inner openmp, whose N2 is " +
                            "the OpenMP thread count (" + std::to_string(threads) + ")");
    if (threads > j)
      throw InvalidArgument("N2 = " + std::to_string(threads) + " OpenMP threads is larger than J = " +
                            std::to_string(j) + " (each thread needs a J row)");
    out = {ranks, threads, 1};
  } else {
    if (n2_option < 1) throw InvalidArgument("--n2 must be >= 1, got " + std::to_string(n2_option));
    if (n2_option > j)
      throw InvalidArgument("--n2 " + std::to_string(n2_option) + " is larger than J = " + std::to_string(j) +
                            " (each rank of a group needs a J row)");
    if (ranks % n2_option != 0)
      throw InvalidArgument("total ranks " + std::to_string(ranks) + " is not N1 x N2 with N2 = --n2 " +
                            std::to_string(n2_option) + " (not a multiple)");
    out = {ranks / n2_option, n2_option, n2_option};
  }
  if (out.n1 > problem.blades)
    throw InvalidArgument("N1 = " + std::to_string(out.n1) + " groups is larger than the number of blades (--blades " +
                          std::to_string(problem.blades) + ")");
  return out;
}

Manufactured::Manufactured(const Problem& problem) : problem_(problem) {
  problem.validate();
  const long ni = problem.grid[0], nj = problem.grid[1], nk = problem.grid[2];
  hx_ = 1.0 / static_cast<double>(ni - 1);
  hy_ = 1.0 / static_cast<double>(nj - 1);
  hz_ = hy_;
  dt_ = kCourant * hy_ * hy_;
  cx_ = static_cast<float>(dt_ / (hx_ * hx_));
  cy_ = static_cast<float>(dt_ / (hy_ * hy_));
  cz_ = static_cast<float>(dt_ / (hz_ * hz_));
  const double ring = static_cast<double>(problem.blades * nk) * hz_;
  kz_ = 2.0 * std::numbers::pi / ring;
  shape_x_.resize(static_cast<std::size_t>(ni));
  for (long i = 0; i < ni; ++i)
    shape_x_[static_cast<std::size_t>(i)] = static_cast<float>(std::sin(kX * static_cast<double>(i) * hx_ + kPhaseX));
  for (long parity = 0; parity < 2; ++parity) {
    auto& y = shape_y_[static_cast<std::size_t>(parity)];
    y.resize(static_cast<std::size_t>(nj));
    const double p = parity == 1 ? problem.offset : 0.0;
    for (long j = 0; j < nj; ++j)
      y[static_cast<std::size_t>(j)] = static_cast<float>(std::sin(kY * (static_cast<double>(j) + p) * hy_ + kPhaseY));
  }
  shape_z_.resize(static_cast<std::size_t>(problem.blades * nk));
  for (long k = 0; k < problem.blades * nk; ++k)
    shape_z_[static_cast<std::size_t>(k)] = static_cast<float>(std::cos(kz_ * static_cast<double>(k) * hz_));
}

double Manufactured::phase(long blade) const noexcept { return blade % 2 == 1 ? problem_.offset : 0.0; }

double Manufactured::neighbour_offset(long blade, int side) const noexcept {
  const long b = problem_.blades;
  const long neighbour = side == 0 ? (blade + b - 1) % b : (blade + 1) % b;
  // Blade b's row j sits at y = (j + p_b) hy = (j + p_b - p_nb + p_nb) hy: the neighbour's fractional row j + d.
  return phase(blade) - phase(neighbour);
}

double Manufactured::time_factor(double t) const noexcept { return 1.0 + kAmplitude * std::sin(kOmega * t); }

double Manufactured::source_factor(double t) const noexcept {
  const double mu = kX * kX + kY * kY + kz_ * kz_;  // -laplacian(X Y Z) = mu X Y Z
  return kAmplitude * kOmega * std::cos(kOmega * t) + mu * time_factor(t);
}

double Manufactured::exact(long blade, long i, long j, long k, double t) const noexcept {
  const double x = static_cast<double>(i) * hx_;
  const double y = (static_cast<double>(j) + phase(blade)) * hy_;
  const double z = static_cast<double>(blade * problem_.grid[2] + k) * hz_;
  return time_factor(t) * std::sin(kX * x + kPhaseX) * std::sin(kY * y + kPhaseY) * std::cos(kz_ * z);
}

double Manufactured::error_bound(long iterations) const noexcept {
  // The error e = u - exact obeys e_(n+1) = A^-1 (M e_n - dt tau_n) with
  //   A = 1 - cx D_xx (Dirichlet): an M-matrix with row sums >= 1, so |A^-1 v|_max <= |v|_max;
  //   M = the explicit J/K update: weights 1 - 2 cy - 2 cz, cy, cy, cz, cz, all >= 0 and summing to 1, and the
  //       ghost planes are convex combinations (1 - |d|, |d|) of the neighbour's rows, so |M e|_max <= |e|_max;
  // hence |e_N|_max <= N dt max|tau| + the rounding of N float steps. With |T| <= 1 + A, |T'| <= A w,
  // |T''| <= A w^2 and |sin|, |cos| <= 1, the local truncation error tau of one step is at most
  //   dt/2 |u_tt|                              (Euler in time)
  // + dt (|u_yyt| + |u_zzt|)                   (J and K terms taken at t_n, the source at t_(n+1))
  // + (hx^2 |u_xxxx| + hy^2 |u_yyyy| + hz^2 |u_zzzz|) / 12   (second-order differences)
  // + |d| (1 - |d|) / 2 hy^2 |u_yy| / hz^2     (linear interpolation of a ghost plane, on the blades' end planes)
  const double a = kAmplitude, w = kOmega, u_max = 1.0 + a;
  const double kx2 = kX * kX, ky2 = kY * kY, kz2 = kz_ * kz_;
  double tau = dt_ / 2.0 * a * w * w + dt_ * a * w * (ky2 + kz2) +
               u_max * (hx_ * hx_ * kx2 * kx2 + hy_ * hy_ * ky2 * ky2 + hz_ * hz_ * kz2 * kz2) / 12.0;
  const double s = problem_.offset;
  if (problem_.blades > 1) tau += s * (1.0 - s) / 2.0 * hy_ * hy_ / (hz_ * hz_) * u_max * ky2;
  // Rounding: a step does about a dozen float operations per point on values up to 3 u_max (the explicit sum
  // before the line solve), and the line solve is backward stable with |A^-1| <= 1; 64 units of rounding (2^-24)
  // of u_max per step, and as much again for the float initial and Dirichlet values, covers it with room.
  const double rounding = 64.0 * std::ldexp(1.0, -24) * u_max;
  const auto n = static_cast<double>(iterations);
  return n * dt_ * tau + (n + 1.0) * rounding;
}

}  // namespace hympi::blades
