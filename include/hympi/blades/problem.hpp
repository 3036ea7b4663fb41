#pragma once
// The blade-row problem (AKIE in Jin et al., "High performance computing using MPI and OpenMP on multi-core
// parallel systems", §3.3): B blades of I x J x K cells in a periodic ring along K, the two
// levels of parallelism (blades over N1 groups; J over N2 threads or ranks inside a group) and the manufactured
// solution the scheme is checked against, with its error bound.
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace hympi::blades {

/// How level 2 (inside a group of blades) is parallelised: OpenMP threads over J, or ranks over J.
enum class InnerMode { openmp, mpi };

/// "openmp" or "mpi". Never fails.
[[nodiscard]] std::string to_string(InnerMode mode);
/// The mode named `text`; throws InvalidArgument naming it otherwise.
[[nodiscard]] InnerMode parse_inner(const std::string& text);

/// The blades, each I x J x K points (x = I fastest in memory), and the J offset of the neighbouring blades' grids.
struct Problem {
  long blades = 8;
  std::array<long, 3> grid{48, 32, 24};  ///< I, J, K points per blade
  double offset = 0.25;                  ///< J cells between neighbouring blades' grids, in [0, 1]
  /// Points over all blades.
  [[nodiscard]] long cells() const noexcept { return blades * grid[0] * grid[1] * grid[2]; }
  /// "8 blades 48x32x24".
  [[nodiscard]] std::string text() const;
  /// Throws InvalidArgument naming the bad value: blades outside [1, 16383] (two MPI tags per blade), I or J < 3,
  /// K < 1, an offset outside [0, 1].
  void validate() const;
};

/// The two levels of one run: N1 groups of blades, N2 workers over J in each (threads or ranks).
struct Levels {
  int n1 = 1;               ///< groups (level 1)
  int n2 = 1;               ///< workers over J per group (level 2): threads (openmp) or ranks (mpi)
  int ranks_per_group = 1;  ///< 1 with openmp, n2 with mpi
};

/// N1 and N2 of `ranks` x `threads` in `mode` (openmp: N1 = ranks, N2 = threads; mpi: N2 = n2_option,
/// N1 = ranks / N2). Throws InvalidArgument naming the value: N1 > blades, N2 > J, ranks not N1 x N2,
/// n2_option < 1, or an n2_option with openmp that is not the thread count.
[[nodiscard]] Levels resolve_levels(const Problem& problem, InnerMode mode, int ranks, int threads, int n2_option);

/// The manufactured solution u = T(t) X(x) Y(y) Z(z) of u_t = u_xx + u_yy + u_zz + f, its separable tables (float,
/// as the solver uses them), the scheme's coefficients and the bound on the scheme's error.
///
/// Geometry: x_i = i hx on [0, 1] and y = (j + p_b) hy with hy = 1 / (J - 1) (walls, Dirichlet), z = (b K + k) hz
/// with hz = hy, periodic over the ring of B K planes. Blade b's grid is offset by p_b = offset J cells for odd b,
/// 0 for even b: offsets that alternate close the ring for every B (an even ring alternates all the way round, an
/// odd one has one matching interface, between blade B-1 and blade 0); offsets that accumulate (b x offset) would
/// leave a jump of B x offset cells at the ring's seam.
/// Scheme: backward Euler along I, forward Euler in J and K, dt = 0.2 hy^2 (cy = cz = 0.2, so the explicit part is
/// a convex combination: 1 - 2 cy - 2 cz >= 0), source f at t_(n+1).
class Manufactured {
 public:
  /// Throws InvalidArgument (Problem::validate).
  explicit Manufactured(const Problem& problem);
  /// The problem it was built for.
  [[nodiscard]] const Problem& problem() const noexcept { return problem_; }
  /// Time step.
  [[nodiscard]] double dt() const noexcept { return dt_; }
  /// dt / hx^2, dt / hy^2, dt / hz^2 (unit diffusivities), rounded to float as the solver uses them.
  [[nodiscard]] float cx() const noexcept { return cx_; }
  [[nodiscard]] float cy() const noexcept { return cy_; }
  [[nodiscard]] float cz() const noexcept { return cz_; }
  /// Blade b's J offset in cells (0 or the problem's offset).
  [[nodiscard]] double phase(long blade) const noexcept;
  /// J cells from blade b's nodes to its neighbour's on side 0 (K = 0, neighbour b-1) or 1 (K = K-1, b+1):
  /// the ghost row j holds the neighbour's value at its fractional row j + this.
  [[nodiscard]] double neighbour_offset(long blade, int side) const noexcept;
  /// T(t) = 1 + A sin(w t).
  [[nodiscard]] double time_factor(double t) const noexcept;
  /// f = (T'(t) + mu T(t)) X Y Z: this scalar factor of it (mu = kx^2 + ky^2 + kz^2).
  [[nodiscard]] double source_factor(double t) const noexcept;
  /// X(x_i), i < I, in float.
  [[nodiscard]] const std::vector<float>& shape_x() const noexcept { return shape_x_; }
  /// Y at blade b's rows, j < J, in float.
  [[nodiscard]] const std::vector<float>& shape_y(long blade) const noexcept { return shape_y_[blade % 2]; }
  /// Z at global plane b K + k, in float.
  [[nodiscard]] const std::vector<float>& shape_z() const noexcept { return shape_z_; }
  /// The exact solution at blade b's point (i, j, k) at time t, in double.
  [[nodiscard]] double exact(long blade, long i, long j, long k, double t) const noexcept;
  /// The bound on max |u - exact| after `iterations` steps from the exact initial state (derivation in the
  /// source); never fails.
  [[nodiscard]] double error_bound(long iterations) const noexcept;

 private:
  Problem problem_;
  double hx_ = 0, hy_ = 0, hz_ = 0, dt_ = 0;
  float cx_ = 0, cy_ = 0, cz_ = 0;
  double kz_ = 0;
  std::vector<float> shape_x_;
  std::array<std::vector<float>, 2> shape_y_;
  std::vector<float> shape_z_;
};

}  // namespace hympi::blades
