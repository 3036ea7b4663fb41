// The pencil solver's set-up: the manufactured problem, options, validation, the error bound (no hot loop).
#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/pencil/solver.hpp"

namespace hympi::pencil {

namespace {

constexpr double kPi = std::numbers::pi;

}  // namespace

double Problem::exact(double x, double y, double z, double t) const noexcept {
  return std::sin(kPi * y / ly) * std::cos(kappa * (x - c * t)) * z_profiles(z)[0];
}

std::array<double, 3> Problem::z_profiles(double z) const noexcept {
  const double profile = 1.0 + 0.5 * std::sin(z) + 0.25 * std::cos(2 * z);
  const double first = 0.5 * std::cos(z) - 0.5 * std::sin(2 * z);
  const double second = -0.5 * std::sin(z) - std::cos(2 * z);
  const double decay = nu * (kappa * kappa + (kPi / ly) * (kPi / ly));
  return {profile, profile * first, decay * profile - nu * second};
}

nlohmann::json Problem::to_json() const {
  return {{"c", c},
          {"nu", nu},
          {"kappa", kappa},
          {"ly", ly},
          {"solution", "sin(pi y/ly) cos(kappa (x - c t)) (1 + sin(z)/2 + cos(2z)/4)"}};
}

nlohmann::json PencilOptions::to_json() const {
  return {{"grid", grid},   {"x0", x0},         {"lx", lx},
          {"problem", problem.to_json()},      {"cfl", cfl},
          {"batch", batch}, {"modes", kept_modes(grid[2])},
          {"transpose", transpose.to_json()}};
}

void PencilOptions::validate(int ranks) const {
  const auto [nx, ny, nz] = grid;
  if (nx < 6 || ny < 6)
    throw InvalidArgument("grid " + std::to_string(nx) + " x " + std::to_string(ny) +
                          " in x and y is too small for the compact closures (needs >= 6 points each)");
  const ZModes modes = dealiased_modes(nz, kMinNz);
  if (ranks < 1) throw InvalidArgument("ranks must be >= 1, got " + std::to_string(ranks));
  // The transpose's own checks, made here so --validate-ranks refuses what the launched run would (fewer x planes
  // or (z, y) lines than ranks, blocks past MPI's int counts).
  transpose::Transpose::check_extents({nx, ny, modes.doubles()}, ranks, transpose.exchange);
  if (!(lx > 0) || !(problem.ly > 0) || !std::isfinite(lx) || !std::isfinite(problem.ly))
    throw InvalidArgument("domain lengths must be > 0, got lx = " + std::to_string(lx) + ", ly = " + std::to_string(problem.ly));
  if (!(problem.nu > 0) || !std::isfinite(problem.nu))
    throw InvalidArgument("diffusivity must be > 0, got " + std::to_string(problem.nu));
  if (!(cfl > 0) || cfl > 1) throw InvalidArgument("cfl must be in (0, 1], got " + std::to_string(cfl));
  if (batch < 1) throw InvalidArgument("z-transform batch must be >= 1, got " + std::to_string(batch));
  transpose.validate();
}

double Standalone::agree_dt(double local) {
  double agreed = 0;
  HYMPI_MPI(MPI_Allreduce(&local, &agreed, 1, MPI_DOUBLE, MPI_MIN, comm_));
  return agreed;
}

double error_bound(const PencilOptions& options, double t, long steps) {
  const Problem& p = options.problem;
  const double hx = options.lx / static_cast<double>(options.grid[0] - 1);
  const double hy = p.ly / static_cast<double>(options.grid[1] - 1);
  const double ky = kPi / p.ly, c = std::abs(p.c);
  const double amplitude = 1.75;  // max |u|: |Z| <= 7/4
  const double hx4 = std::pow(hx, 4), hy4 = std::pow(hy, 4);
  const double k5 = std::pow(p.kappa, 5), k6 = std::pow(p.kappa, 6), ky6 = std::pow(ky, 6);
  // Leading truncation errors on the solution's modes: interior Pade rows k^5 h^4 / 180 (first derivative) and
  // k^6 h^4 / 240 (second); the closures' error reaching the first interior point, 0.068 k^5 h^4 (compact
  // first-derivative closure, through its coupling 3) and 0.076 k^6 h^4 (explicit second-derivative closure,
  // 137/180 through the Pade coupling 1/10).
  const double interior = c * k5 * hx4 / 180.0 + p.nu * (k6 * hx4 + ky6 * hy4) / 240.0;
  const double near_boundary = c * 0.068 * k5 * hx4 + p.nu * 0.076 * (k6 * hx4 + ky6 * hy4);
  // Errors stop growing once the flow carries them out (lx / c) and, next to the boundaries, once diffusion
  // across the first cell (h^2 / nu) or the flow past it (h / c) balances their source.
  const double flush = c > 0 ? options.lx / c : t;
  const double h = std::max(hx, hy);
  const double boundary_time = h * h / p.nu + (c > 0 ? hx / c : t);
  const double unit = options.transpose.wire == transpose::WirePrecision::single_precision ? 0x1p-24 : 0x1p-52;
  return amplitude * (interior * std::min(t, flush) + near_boundary * std::min(t, boundary_time) +
                      3.0 * static_cast<double>(steps) * unit);
}

}  // namespace hympi::pencil
