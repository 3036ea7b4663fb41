#pragma once
// The pencil solver (issue 16; the scheme of Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code over
// 32k cores", on a model equation): a 3D advection-diffusion equation with
// a quadratic z term, spectral and dealiased in z, compact finite differences in y on planes and in x on
// pencils (two global transposes per substep), 3-substep low-storage semi-implicit Runge-Kutta.
#include <mpi.h>

#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "hympi/pencil/compact.hpp"
#include "hympi/pencil/spectral.hpp"
#include "hympi/transpose/transpose.hpp"

namespace hympi::pencil {

/// u_t + c u_x + u u_z = nu (u_xx + u_yy + u_zz) + f on x in [x0, x0 + lx], y in [0, ly], z periodic over 2 pi,
/// with the manufactured solution u = sin(pi y / ly) cos(kappa (x - c t)) Z(z), Z = 1 + sin(z)/2 + cos(2z)/4,
/// and the forcing f that makes it exact. Dirichlet values from u at x = x0 (inflow, c > 0), x = x0 + lx and
/// the walls y = 0, ly (where u = 0). u u_z is Sillero et al.'s kind of term: a product formed in physical z space,
/// so every substep runs the c2r/r2c transforms and the 2/3 rule; Z holds modes |k| <= 2, u u_z |k| <= 4.
struct Problem {
  double c = 1.0;                          ///< advection speed in x
  double nu = 0.05;                        ///< diffusivity
  double kappa = 6.283185307179586;        ///< x wavenumber of the solution (one wave over x in [0, 1])
  double ly = 1.0;                         ///< wall distance
  static constexpr long kSolutionModes = 2;  ///< highest z mode of the solution
  /// The exact solution at (x, y, z, t).
  [[nodiscard]] double exact(double x, double y, double z, double t) const noexcept;
  /// The solution's z profile Z(z) and the two z profiles of the forcing
  /// f = (Y X)^2 Z Z' + Y X (nu (kappa^2 + (pi/ly)^2) Z - nu Z''), Y X = sin(pi y/ly) cos(kappa (x - c t)).
  [[nodiscard]] std::array<double, 3> z_profiles(double z) const noexcept;
  /// {"c","nu","kappa","ly","solution"}; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Everything one solver run needs; printable into HYMPI_RESULT.
struct PencilOptions {
  std::array<long, 3> grid{32, 32, 32};  ///< nx, ny, nz grid points (x and y include both ends)
  double x0 = 0.0;                       ///< x of the first plane
  double lx = 1.0;                       ///< x length
  Problem problem{};
  double cfl = 0.8;  ///< fraction of the explicit RK3 stability limit the time step takes
  int batch = 8;     ///< z lines per FFTW batch
  transpose::TransposeOptions transpose{};
  /// Smallest nz: the 2/3 rule must keep the |k| <= 4 modes of u u_z, k < nz/3.
  static constexpr long kMinNz = 3 * 2 * Problem::kSolutionModes + 2;
  /// {"grid","x0","lx","problem","cfl","batch","modes","transpose"}; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
  /// Throws InvalidArgument naming the value: nx or ny < 6, odd nz or nz < kMinNz, fewer x planes or (z, y)
  /// lines than `ranks`, a non-positive length, diffusivity or cfl, bad transpose options.
  void validate(int ranks) const;
};

class PencilSolver;

/// What a substep exchanges beyond the solver's own ranks: the time step every rank must agree on and the
/// inflow plane. The standalone run agrees over its communicator and takes the exact inflow; two coupled
/// groups agree over the world and feed the fine group the coarse group's plane.
class Coupling {
 public:
  virtual ~Coupling() = default;
  /// The smallest `local` bound of every rank sharing the time step (collective over them, each substep).
  virtual double agree_dt(double local) = 0;
  /// May replace `plane` (ny lines of doubles() doubles), the x = x0 boundary at the end of a substep
  /// reaching time t, and says whether it did; called each substep on the rank owning x = x0 only, outside
  /// parallel regions. Otherwise the boundary points, like those of the walls and the outflow, follow
  /// du/dt = dg/dt of the exact solution g through the same substeps.
  virtual bool inflow(const PencilSolver& solver, double t, std::span<double> plane) {
    (void)solver, (void)t, (void)plane;
    return false;
  }
  /// Called on every rank of the solver after each substep's new state is complete.
  virtual void substep_done(const PencilSolver& solver) { (void)solver; }
};

/// The standalone coupling: the time step agreed over `comm`, the exact inflow.
class Standalone final : public Coupling {
 public:
  explicit Standalone(MPI_Comm comm) noexcept : comm_(comm) {}
  /// MPI_Allreduce (min) over comm; throws MpiError.
  double agree_dt(double local) override;

 private:
  MPI_Comm comm_;
};

/// Seconds one rank spent in each part of the steps so far.
struct SolverTimes {
  double compute_s = 0;    ///< derivatives, transforms, updates
  double transpose_s = 0;  ///< inside the global transposes (Transpose::times().total_s())
  double coupling_s = 0;   ///< inside the Coupling's calls (waiting for the other ranks or group)
};

/// The distributed solver. The state is spectral in z and held as planes: rank r owns x planes
/// planes_x(), local index zd + doubles() * (y + ny * (x - x.begin)), zd = 2k (re) or 2k + 1 (im).
class PencilSolver {
 public:
  /// Collective over `comm` (the transposes use a duplicate); `coupling` must outlive the solver.
  /// Throws InvalidArgument as PencilOptions::validate.
  PencilSolver(const PencilOptions& options, MPI_Comm comm, Coupling& coupling);

  /// Sets the exact solution at time t0 and agrees the first time step (collective).
  void start(double t0);
  /// Continues from a saved state instead of start(): this rank's planes `u` (as state() gave them), the time,
  /// the agreed time-step bound (dt_bound()) and the steps done, all after a complete step. That is everything
  /// a step carries into the next: the low-storage RK3's stored term is rewritten by the first substep before it
  /// is read, the other arrays are scratch. Collective over the solver's ranks (a transpose round trip settles the
  /// automatic tile, as start() does); throws InvalidArgument for a wrong size, a bound that is not positive,
  /// a time that is not finite or negative steps.
  void resume(std::span<const double> u, double t, double dt_bound, long steps);
  /// One 3-substep step with dt = min(the agreed bound, t_end - time()); returns dt (collective).
  /// Throws Error when the solution stops being finite.
  double step(double t_end = std::numeric_limits<double>::infinity());
  /// Largest |u - exact| over every grid point (collective over the solver's ranks).
  [[nodiscard]] double max_error() const;
  /// Largest |u - v| over every grid point, v the state of `other`, a solver of the same grid on the same
  /// ranks (collective); throws InvalidArgument when the grids or splits differ.
  [[nodiscard]] double max_difference(const PencilSolver& other) const;

  [[nodiscard]] double time() const noexcept { return t_; }
  /// The time-step bound agreed at the end of the last step (the next step's dt, unless t_end cuts it).
  [[nodiscard]] double dt_bound() const noexcept { return dt_bound_; }
  [[nodiscard]] long steps_done() const noexcept { return steps_; }
  [[nodiscard]] const PencilOptions& options() const noexcept { return options_; }
  [[nodiscard]] const ZModes& modes() const noexcept { return modes_; }
  [[nodiscard]] transpose::Extent planes_x() const noexcept { return transpose_.planes_x(); }
  [[nodiscard]] const transpose::Transpose& transpose() const noexcept { return transpose_; }
  /// The state (this rank's planes, spectral).
  [[nodiscard]] std::span<const double> state() const noexcept { return u_; }
  /// The state as this rank's pencils, as the last transpose left it (between substeps: scratch).
  [[nodiscard]] std::span<const double> pencils() const noexcept { return u_pencils_; }
  /// This rank's planes in physical space, x fastest: out[xl + nxl * (y + ny * m)] = u(planes_x().begin + xl, y,
  /// z_m = 2 pi m / nz), nxl = planes_x().size() (for snapshots; not a hot path). Throws InvalidArgument when
  /// `out` does not hold nxl * ny * nz values.
  void physical(std::span<double> out) const;
  /// Grid spacing in x and y.
  [[nodiscard]] double hx() const noexcept;
  [[nodiscard]] double hy() const noexcept;
  /// The exact solution's spectral plane at x (ny lines of doubles() doubles) at time t; throws
  /// InvalidArgument for a wrong plane size.
  void exact_plane(double x, double t, std::span<double> plane) const;
  /// Bytes of the solver's arrays on this rank held as planes and as pencils.
  [[nodiscard]] std::size_t plane_bytes() const noexcept;
  [[nodiscard]] std::size_t pencil_bytes() const noexcept;
  [[nodiscard]] SolverTimes times() const noexcept;
  /// Forgets the times so far (after a warm-up).
  void reset_times() noexcept;

 private:
  void substep(int k, double dt);
  double rhs_and_update(int k, double t_start, double dt);
  void x_derivatives();
  void take_inflow(double t);
  double local_max_u();
  /// max |u - other| (other empty: |u - exact|) over every point, reduced over the solver's ranks.
  double max_deviation(std::span<const double> other) const;
  double stability_bound(double max_u) const noexcept;

  PencilOptions options_;
  Coupling& coupling_;
  ZModes modes_;
  transpose::Transpose transpose_;
  ZTransform z_;
  CompactDerivative dx1_, dx2_, dy2_;
  int threads_;
  std::vector<ZTransform::Workspace> workspaces_;  ///< one per thread
  std::vector<std::vector<double>> scratch_;       ///< one per thread
  // What the transposes read and write starts cache lines (for their streaming stores).
  LineAlignedVector<double> u_, previous_, rhs_, work_;  ///< planes: state, last substep's N, this substep's N, u_yy
  LineAlignedVector<double> u_pencils_, rhs_pencils_;    ///< pencils
  std::vector<double> z_hat_, g1_hat_, g2_hat_;          ///< spectral Z, Z Z', nu (kappa^2 + (pi/ly)^2) Z - nu Z''
  std::vector<double> y_profile_;                        ///< sin(pi y / ly) at each y
  double t_ = 0, dt_bound_ = 0;
  long steps_ = 0;
  double compute_s_ = 0, coupling_s_ = 0;
};

/// The error bound of a run of the scheme to time t in `steps` steps on `options`' grid, from the leading
/// truncation errors of the interior and boundary rows on the solution's modes (each O(h^4)), each times the
/// time it can act before the flow or diffusion removes it, of amplitude max|u| = 7/4, plus the rounding of
/// each transpose (single wire: 3 steps x 2^-24, double: 3 steps x 2^-52). Never fails.
[[nodiscard]] double error_bound(const PencilOptions& options, double t, long steps);

}  // namespace hympi::pencil
