// The pencil solver's substeps (hot): x derivatives on pencils, y derivatives, the dealiased product and the
// semi-implicit update on planes, threads over lines in both layouts.
#include "hympi/pencil/solver.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"

namespace hympi::pencil {

namespace {

// Spalart, Moser & Rogers (1991) low-storage RK3: explicit terms N with gamma (this substep) and zeta (the
// last), the implicit z diffusion L by alpha (old) and beta (new) weights, Crank-Nicolson-like per substep.
constexpr double kGamma[3] = {8.0 / 15.0, 5.0 / 12.0, 3.0 / 4.0};
constexpr double kZeta[3] = {0.0, -17.0 / 60.0, -5.0 / 12.0};
constexpr double kAlpha[3] = {29.0 / 96.0, -3.0 / 40.0, 1.0 / 6.0};
constexpr double kBeta[3] = {37.0 / 160.0, 5.0 / 24.0, 1.0 / 6.0};
/// Substep start times as fractions of dt (and 1 for the step's end).
constexpr double kStageTime[4] = {0.0, 8.0 / 15.0, 2.0 / 3.0, 1.0};

// Explicit RK3's stability limits on the imaginary axis (advection) and the negative real axis (diffusion).
constexpr double kImaginaryLimit = 1.7320508075688772;
constexpr double kRealLimit = 2.51;
// Pencil lines one thread differentiates together (the compact operators' block).
constexpr long kPencilBlock = 32;
// Plane columns one y-derivative task takes.
constexpr long kColumnBlock = 32;

PencilOptions validated(const PencilOptions& options, MPI_Comm comm) {
  int ranks = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &ranks));
  options.validate(ranks);
  return options;
}

double now() { return MPI_Wtime(); }

}  // namespace

PencilSolver::PencilSolver(const PencilOptions& options, MPI_Comm comm, Coupling& coupling)
    : options_(validated(options, comm)),
      coupling_(coupling),
      modes_(dealiased_modes(options.grid[2], PencilOptions::kMinNz)),
      transpose_({options.grid[0], options.grid[1], modes_.doubles()}, comm, options.transpose),
      z_(modes_, options.batch),
      dx1_(1, options.grid[0], options.lx / static_cast<double>(options.grid[0] - 1)),
      dx2_(2, options.grid[0], options.lx / static_cast<double>(options.grid[0] - 1)),
      dy2_(2, options.grid[1], options.problem.ly / static_cast<double>(options.grid[1] - 1)),
      threads_(omp_get_max_threads()) {
  const long d = modes_.doubles(), ny = options_.grid[1], nx = options_.grid[0];
  for (int t = 0; t < threads_; ++t) {
    workspaces_.push_back(z_.workspace());
    scratch_.emplace_back(static_cast<std::size_t>(std::max(z_.batch() * d, kPencilBlock * nx)));
  }
  const std::size_t planes = transpose_.plane_size(), pencils = transpose_.pencil_size();
  u_.assign(planes, 0.0);
  previous_.assign(planes, 0.0);
  rhs_.assign(planes, 0.0);
  work_.assign(planes, 0.0);
  u_pencils_.assign(pencils, 0.0);
  rhs_pencils_.assign(pencils, 0.0);

  // The z profiles' kept modes, by the same transform the solver runs (exact: they are band-limited).
  ZTransform::Workspace& ws = workspaces_.front();
  std::vector<double>* outs[3] = {&z_hat_, &g1_hat_, &g2_hat_};
  for (int p = 0; p < 3; ++p) {
    std::span<double> line = ws.real(0);
    std::fill(line.begin(), line.end(), 0.0);
    for (long j = 0; j < modes_.nz; ++j)
      line[static_cast<std::size_t>(j)] =
          options_.problem.z_profiles(2 * std::numbers::pi * static_cast<double>(j) / static_cast<double>(modes_.nz))
              [static_cast<std::size_t>(p)];
    outs[p]->assign(static_cast<std::size_t>(d), 0.0);
    z_.to_spectral(ws, 0, 1, *outs[p]);
  }
  y_profile_.resize(static_cast<std::size_t>(ny));
  for (long y = 0; y < ny; ++y)
    y_profile_[static_cast<std::size_t>(y)] =
        std::sin(std::numbers::pi * static_cast<double>(y) * hy() / options_.problem.ly);
}

double PencilSolver::hx() const noexcept { return options_.lx / static_cast<double>(options_.grid[0] - 1); }
double PencilSolver::hy() const noexcept { return options_.problem.ly / static_cast<double>(options_.grid[1] - 1); }

void PencilSolver::exact_plane(double x, double t, std::span<double> plane) const {
  const long d = modes_.doubles(), ny = options_.grid[1];
  if (plane.size() != static_cast<std::size_t>(ny * d))
    throw InvalidArgument("plane of " + std::to_string(plane.size()) + " doubles, expected " + std::to_string(ny * d));
  const Problem& p = options_.problem;
  const double wave = std::cos(p.kappa * (x - p.c * t));
  for (long y = 0; y < ny; ++y) {
    const double a = y_profile_[static_cast<std::size_t>(y)] * wave;
    for (long zd = 0; zd < d; ++zd)
      plane[static_cast<std::size_t>(y * d + zd)] = a * z_hat_[static_cast<std::size_t>(zd)];
  }
}

void PencilSolver::start(double t0) {
  t_ = t0;
  steps_ = 0;
  const long plane = options_.grid[1] * modes_.doubles();
  const transpose::Extent xs = planes_x();
  for (long x = xs.begin; x < xs.end; ++x)
    exact_plane(options_.x0 + static_cast<double>(x) * hx(), t0,
                std::span<double>(u_).subspan(static_cast<std::size_t>((x - xs.begin) * plane),
                                              static_cast<std::size_t>(plane)));
  std::fill(previous_.begin(), previous_.end(), 0.0);
  // One round trip settles the transposes' automatic tile before anything is timed.
  transpose_.planes_to_pencils(u_, u_pencils_);
  transpose_.pencils_to_planes(u_pencils_, work_);
  dt_bound_ = coupling_.agree_dt(stability_bound(local_max_u()));
  reset_times();
  if (!(dt_bound_ > 0)) throw Error("the initial state gives no stable time step");
}

void PencilSolver::resume(std::span<const double> u, double t, double dt_bound, long steps) {
  if (u.size() != u_.size())
    throw InvalidArgument("state of " + std::to_string(u.size()) + " doubles, this rank holds " +
                          std::to_string(u_.size()));
  if (!(dt_bound > 0) || !std::isfinite(dt_bound) || !std::isfinite(t) || steps < 0)
    throw InvalidArgument("cannot resume at t = " + std::to_string(t) + ", step " + std::to_string(steps) +
                          " with time-step bound " + std::to_string(dt_bound));
  std::copy(u.begin(), u.end(), u_.begin());
  t_ = t;
  dt_bound_ = dt_bound;
  steps_ = steps;
  // Never read before the first substep rewrites it (zeta = 0 there); zeroed so a resumed solver is start()'s.
  std::fill(previous_.begin(), previous_.end(), 0.0);
  transpose_.planes_to_pencils(u_, u_pencils_);
  transpose_.pencils_to_planes(u_pencils_, work_);
  reset_times();
}

void PencilSolver::physical(std::span<double> out) const {
  const long d = modes_.doubles(), ny = options_.grid[1], nz = modes_.nz, batch = z_.batch();
  const long planes = planes_x().size();
  if (out.size() != static_cast<std::size_t>(planes * ny * nz))
    throw InvalidArgument("physical field of " + std::to_string(out.size()) + " values, this rank holds " +
                          std::to_string(planes * ny * nz));
  ZTransform::Workspace ws = z_.workspace();
  for (long plane = 0; plane < planes; ++plane)
    for (long y0 = 0; y0 < ny; y0 += batch) {
      const long nb = std::min(batch, ny - y0);
      z_.to_physical(std::span<const double>(u_).subspan(static_cast<std::size_t>((plane * ny + y0) * d)), nb, ws, 0,
                     false);
      const std::span<const double> u = ws.real(0);
      for (long j = 0; j < nb; ++j)
        for (long m = 0; m < nz; ++m)
          out[static_cast<std::size_t>(plane + planes * (y0 + j + ny * m))] = u[static_cast<std::size_t>(j * nz + m)];
    }
}

double PencilSolver::stability_bound(double max_u) const noexcept {
  if (!std::isfinite(max_u)) return 0.0;
  const Problem& p = options_.problem;
  const double kmax = static_cast<double>(modes_.kept - 1);
  const double advection = std::abs(p.c) * dx1_.max_eigenvalue_h() / hx() + max_u * kmax;
  const double diffusion = p.nu * dx2_.max_eigenvalue_h() * (1.0 / (hx() * hx()) + 1.0 / (hy() * hy()));
  return options_.cfl / (advection / kImaginaryLimit + diffusion / kRealLimit);
}

double PencilSolver::step(double t_end) {
  if (!(t_end > t_)) throw InvalidArgument("step to t = " + std::to_string(t_end) + " from t = " + std::to_string(t_));
  const double dt = std::min(dt_bound_, t_end - t_);
  double bound = std::numeric_limits<double>::infinity();
  for (int k = 0; k < 3; ++k) {
    const double start = now(), transposed = transpose_.times().total_s();
    transpose_.planes_to_pencils(u_, u_pencils_);
    x_derivatives();
    transpose_.pencils_to_planes(rhs_pencils_, rhs_);
    const double max_u = rhs_and_update(k, t_ + kStageTime[k] * dt, dt);
    take_inflow(t_ + kStageTime[k + 1] * dt);
    const double before_coupling = now();
    coupling_.substep_done(*this);
    bound = std::min(bound, coupling_.agree_dt(stability_bound(max_u)));
    const double end = now();
    coupling_s_ += end - before_coupling;
    compute_s_ += before_coupling - start - (transpose_.times().total_s() - transposed);
  }
  // Every rank sees the same agreed bound, so every rank throws together.
  if (!(bound > 0)) throw Error("the solution is no longer finite after step " + std::to_string(steps_ + 1));
  t_ = t_end - t_ <= dt_bound_ ? t_end : t_ + dt;
  dt_bound_ = bound;
  ++steps_;
  return dt;
}

void PencilSolver::x_derivatives() {
  const long nx = options_.grid[0];
  const long lines = transpose_.pencil_lines().size();
  const long blocks = (lines + kPencilBlock - 1) / kPencilBlock;
  const double c = options_.problem.c, nu = options_.problem.nu;
  ParallelErrors errors;
#pragma omp parallel for num_threads(threads_) schedule(static)
  for (long b = 0; b < blocks; ++b) {
    errors.capture([&] {
      const long l0 = b * kPencilBlock, nb = std::min(kPencilBlock, lines - l0);
      const auto offset = static_cast<std::size_t>(l0 * nx), size = static_cast<std::size_t>(nb * nx);
      const LineSet set{nb, nx, nx, 1};
      const std::span<const double> in = std::span<const double>(u_pencils_).subspan(offset, size);
      const std::span<double> out = std::span<double>(rhs_pencils_).subspan(offset, size);
      std::vector<double>& second = scratch_[static_cast<std::size_t>(omp_get_thread_num())];
      dx1_.apply(in, out, set);
      dx2_.apply(in, second, set);
      for (std::size_t i = 0; i < size; ++i) out[i] = -c * out[i] + nu * second[i];
    });
  }
  errors.rethrow();
}

double PencilSolver::rhs_and_update(int k, double t_start, double dt) {
  const long d = modes_.doubles(), ny = options_.grid[1], nz = modes_.nz;
  const long planes = planes_x().size(), batch = z_.batch();
  const long column_blocks = (d + kColumnBlock - 1) / kColumnBlock;
  const long y_blocks = (ny + batch - 1) / batch;
  const Problem& p = options_.problem;
  const double gamma = kGamma[k], zeta = kZeta[k];
  // The implicit z diffusion is diagonal per mode: (1 - dt beta L) u_new = (1 + dt alpha L) u_old + ...
  std::vector<double> keep(static_cast<std::size_t>(d)), gain(static_cast<std::size_t>(d));
  for (long zd = 0; zd < d; ++zd) {
    const double wavenumber = static_cast<double>(zd / 2);
    const double l = -p.nu * wavenumber * wavenumber;
    gain[static_cast<std::size_t>(zd)] = 1.0 / (1.0 - dt * kBeta[k] * l);
    keep[static_cast<std::size_t>(zd)] = (1.0 + dt * kAlpha[k] * l) * gain[static_cast<std::size_t>(zd)];
  }
  double max_u = 0.0;
  ParallelErrors errors;
#pragma omp parallel num_threads(threads_) reduction(max : max_u)
  {
    const auto tid = static_cast<std::size_t>(omp_get_thread_num());
#pragma omp for schedule(static)
    for (long task = 0; task < planes * column_blocks; ++task) {
      errors.capture([&] {
        const long plane = task / column_blocks, c0 = (task % column_blocks) * kColumnBlock;
        const auto offset = static_cast<std::size_t>(plane * ny * d + c0);
        const LineSet set{std::min(kColumnBlock, d - c0), ny, 1, d};
        dy2_.apply(std::span<const double>(u_).subspan(offset), std::span<double>(work_).subspan(offset), set);
      });
    }
    // (implicit barrier: every u_yy is computed before any line of u changes)
#pragma omp for schedule(static)
    for (long task = 0; task < planes * y_blocks; ++task) {
      errors.capture([&] {
        const long plane = task / y_blocks, y0 = (task % y_blocks) * batch, nb = std::min(batch, ny - y0);
        const auto offset = static_cast<std::size_t>((plane * ny + y0) * d);
        ZTransform::Workspace& ws = workspaces_[tid];
        std::vector<double>& product = scratch_[tid];
        z_.to_physical(std::span<const double>(u_).subspan(offset), nb, ws, 0, false);
        z_.to_physical(std::span<const double>(u_).subspan(offset), nb, ws, 1, true);
        const std::span<double> u = ws.real(0), u_z = ws.real(1);
        for (long j = 0; j < nb * nz; ++j) {
          const auto i = static_cast<std::size_t>(j);
          max_u = std::max(max_u, std::abs(u[i]));
          u[i] *= u_z[i];
        }
        z_.to_spectral(ws, 0, nb, product);
        // x from the global index, as every rank count computes it.
        const long gx = planes_x().begin + plane;
        const double phase = p.kappa * (options_.x0 + static_cast<double>(gx) * hx() - p.c * t_start);
        const double wave = std::cos(phase), wave_t = p.kappa * p.c * std::sin(phase);
        const bool boundary_plane = gx == 0 || gx == options_.grid[0] - 1;
        for (long j = 0; j < nb; ++j) {
          const long y = y0 + j;
          const double a = y_profile_[static_cast<std::size_t>(y)] * wave;
          double* u_line = u_.data() + offset + j * d;
          double* previous_line = previous_.data() + offset + j * d;
          if (boundary_plane || y == 0 || y == ny - 1) {
            // Boundary points follow du/dt = dg/dt through the same substeps: exact values g(t) at the stages
            // would not be the scheme's stage values and would cost it its order next to the boundary.
            const double a_t = y_profile_[static_cast<std::size_t>(y)] * wave_t;
            for (long zd = 0; zd < d; ++zd) {
              const double n = a_t * z_hat_[static_cast<std::size_t>(zd)];
              u_line[zd] += dt * (k == 0 ? gamma * n : gamma * n + zeta * previous_line[zd]);
              previous_line[zd] = n;
            }
            continue;
          }
          const double* rhs_line = rhs_.data() + offset + j * d;
          const double* u_yy = work_.data() + offset + j * d;
          const double* product_line = product.data() + j * d;
          for (long zd = 0; zd < d; ++zd) {
            const auto z = static_cast<std::size_t>(zd);
            const double n = rhs_line[zd] + p.nu * u_yy[zd] - product_line[zd] + a * a * g1_hat_[z] + a * g2_hat_[z];
            const double explicit_part = k == 0 ? gamma * n : gamma * n + zeta * previous_line[zd];
            u_line[zd] = keep[z] * u_line[zd] + dt * gain[z] * explicit_part;
            previous_line[zd] = n;
          }
        }
      });
    }
  }
  errors.rethrow();
  return max_u;
}

void PencilSolver::take_inflow(double t) {
  if (planes_x().begin != 0) return;
  const auto plane = static_cast<std::size_t>(options_.grid[1] * modes_.doubles());
  const double start = now();
  (void)coupling_.inflow(*this, t, std::span<double>(u_).first(plane));
  // Counted as coupling, not compute: step() adds this substep's whole span to compute_s_.
  const double waited = now() - start;
  coupling_s_ += waited;
  compute_s_ -= waited;
}

double PencilSolver::local_max_u() {
  const long d = modes_.doubles(), ny = options_.grid[1], batch = z_.batch();
  ZTransform::Workspace& ws = workspaces_.front();
  double max_u = 0;
  // Batches never cross planes (as in rhs_and_update), so a line's batch position is y mod batch on every
  // rank count and the transforms, hence the results, are the same bit for bit.
  for (long plane = 0; plane < planes_x().size(); ++plane)
    for (long y0 = 0; y0 < ny; y0 += batch) {
      const long nb = std::min(batch, ny - y0);
      z_.to_physical(std::span<const double>(u_).subspan(static_cast<std::size_t>((plane * ny + y0) * d)), nb, ws, 0,
                     false);
      for (const double v : ws.real(0).first(static_cast<std::size_t>(nb * modes_.nz)))
        max_u = std::max(max_u, std::abs(v));
    }
  return max_u;
}

double PencilSolver::max_error() const { return max_deviation({}); }

double PencilSolver::max_difference(const PencilSolver& other) const {
  if (other.u_.size() != u_.size() || other.options_.grid != options_.grid)
    throw InvalidArgument("solvers differ in grid or split: " + std::to_string(u_.size()) + " vs " +
                          std::to_string(other.u_.size()) + " local values");
  return max_deviation(other.u_);
}

double PencilSolver::max_deviation(std::span<const double> other) const {
  const long d = modes_.doubles(), ny = options_.grid[1], nz = modes_.nz, batch = z_.batch();
  const transpose::Extent xs = planes_x();
  ZTransform::Workspace ws = z_.workspace();
  std::vector<double> lines(static_cast<std::size_t>(batch * d));
  double worst = 0;
  for (long x = xs.begin; x < xs.end; ++x) {
    const double xc = options_.x0 + static_cast<double>(x) * hx();
    for (long y0 = 0; y0 < ny; y0 += batch) {
      const long nb = std::min(batch, ny - y0);
      const auto offset = static_cast<std::size_t>(((x - xs.begin) * ny + y0) * d);
      for (std::size_t i = 0; i < static_cast<std::size_t>(nb * d); ++i)
        lines[i] = u_[offset + i] - (other.empty() ? 0.0 : other[offset + i]);
      z_.to_physical(lines, nb, ws, 0, false);
      const std::span<double> u = ws.real(0);
      for (long j = 0; j < nb; ++j)
        for (long m = 0; m < nz; ++m) {
          const double z = 2 * std::numbers::pi * static_cast<double>(m) / static_cast<double>(nz);
          const double reference =
              other.empty() ? options_.problem.exact(xc, static_cast<double>(y0 + j) * hy(), z, t_) : 0.0;
          worst = std::max(worst, std::abs(u[static_cast<std::size_t>(j * nz + m)] - reference));
        }
    }
  }
  return max_over(transpose_.comm(), worst);
}

std::size_t PencilSolver::plane_bytes() const noexcept {
  return (u_.size() + previous_.size() + rhs_.size() + work_.size()) * sizeof(double);
}

std::size_t PencilSolver::pencil_bytes() const noexcept {
  return (u_pencils_.size() + rhs_pencils_.size()) * sizeof(double);
}

SolverTimes PencilSolver::times() const noexcept {
  return {compute_s_, transpose_.times().total_s(), coupling_s_};
}

void PencilSolver::reset_times() noexcept {
  compute_s_ = coupling_s_ = 0;
  transpose_.reset_times();
}

}  // namespace hympi::pencil
