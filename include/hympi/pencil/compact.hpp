#pragma once
// Compact (Pade, tridiagonal) derivatives on non-periodic lines, and the batched Thomas solver under them
// (issue 16: the compact finite differences of Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code
// over 32k cores", in x on pencils and in y on planes).
#include <cstddef>
#include <span>
#include <vector>

namespace hympi::pencil {

/// `count` lines of `points` values each inside one buffer: value i of line l is at
/// l * line_stride + i * point_stride (planes: y lines with line_stride 1; pencils: x lines with point_stride 1).
struct LineSet {
  long count = 0;
  long points = 0;
  long line_stride = 1;
  long point_stride = 1;
  /// Doubles a buffer needs to hold every line (0 for no lines).
  [[nodiscard]] std::size_t extent() const noexcept;
};

/// A constant tridiagonal matrix, factored once (Thomas algorithm, no pivoting) and solved for many lines.
class Tridiagonal {
 public:
  /// Row i reads sub[i] x[i-1] + diag[i] x[i] + sup[i] x[i+1] (sub[0] and sup[n-1] are ignored). Throws
  /// InvalidArgument when the three sizes differ, n < 2, or an elimination pivot is zero or not finite.
  Tridiagonal(std::vector<double> sub, std::vector<double> diag, std::vector<double> sup);
  /// Rows of the matrix.
  [[nodiscard]] long size() const noexcept { return static_cast<long>(inv_pivot_.size()); }
  /// Replaces every line of `data` by the solution of A x = line. Throws InvalidArgument when lines.points
  /// != size() or `data` is smaller than lines.extent().
  void solve(std::span<double> data, const LineSet& lines) const;

 private:
  std::vector<double> sub_;        ///< sub-diagonal
  std::vector<double> inv_pivot_;  ///< 1 / pivot of each eliminated row
  std::vector<double> upper_;      ///< sup[i] / pivot[i]: the eliminated matrix's upper diagonal
};

/// Fourth-order Pade derivative on a uniform non-periodic grid of n points (spacing h), both ends closed by
/// fourth-order one-sided rows (Lele 1992), so the operator is fourth order up to the boundary:
///   first:  f'_{i-1}/4 + f'_i + f'_{i+1}/4 = 3 (f_{i+1} - f_{i-1}) / (4h);
///           f'_0 + 3 f'_1 = (-17/6 f_0 + 3/2 f_1 + 3/2 f_2 - 1/6 f_3) / h   (compact)
///   second: f''_{i-1}/10 + f''_i + f''_{i+1}/10 = 6/5 (f_{i+1} - 2 f_i + f_{i-1}) / h^2;
///           f''_0 = (45 f_0 - 154 f_1 + 214 f_2 - 156 f_3 + 61 f_4 - 10 f_5) / (12 h^2)   (explicit)
/// and the mirror rows at i = n-1. The third-order compact closures (f'_0 + 2 f'_1, f''_0 + 11 f''_1) were
/// tried first: their larger error next to a Dirichlet boundary dominated the solver's error on every grid.
class CompactDerivative {
 public:
  /// order 1 or 2. Throws InvalidArgument naming the value for another order, n < 6 or h not > 0.
  CompactDerivative(int order, long n, double h);
  /// out = d^order f / dx^order of every line of `f` (`out` has the same layout and must not overlap `f`).
  /// Throws InvalidArgument when lines.points != points() or a span is smaller than lines.extent().
  void apply(std::span<const double> f, std::span<double> out, const LineSet& lines) const;
  /// Grid points of a line.
  [[nodiscard]] long points() const noexcept { return n_; }
  /// Largest |eigenvalue| of the interior scheme times h^order (sqrt 3 for the first derivative, 6 for the
  /// second): what the time-step limit uses.
  [[nodiscard]] double max_eigenvalue_h() const noexcept;

 private:
  int order_;
  long n_;
  double h_;
  Tridiagonal matrix_;
};

}  // namespace hympi::pencil
