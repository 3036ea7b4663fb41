#pragma once
// Loops carry unroll hints: with the axis a template argument, full unrolling folds the zero
// entries away, which is what makes these as fast as the reference's written-out blocks.
// Flux Jacobians of the compressible Navier-Stokes equations along one axis, as BT's x/y/z_solve
// and LU's jacld/jacu build them: F = d(inviscid flux)/du, N = d(viscous flux)/du.
namespace hympi::npb {

/// 5x5 row-major block.
using Block = double[5][5];

/// Fills F and N at one point for axis A (1=x, 2=y, 3=z: u[A] is the normal momentum).
/// `rho` = 1/u[0], `q` = kinetic energy per volume / rho (BT's qs), `square` = kinetic energy.
template <int A>
[[gnu::always_inline]] inline void flux_jacobians(const double* u, double rho, double q, double square, double c1, double c2,
                           double c3c4, double con43, double c1345, Block& F, Block& N) {
  const double tmp1 = rho;
  const double tmp2 = tmp1 * tmp1;
  const double tmp3 = tmp1 * tmp2;
  const double un = u[A];
  #pragma GCC unroll 5
  for (int n = 0; n < 5; ++n) {
    F[0][n] = 0.0;
    N[0][n] = 0.0;
  }
  F[0][A] = 1.0;
  double coef[4];
  #pragma GCC unroll 5
  for (int m = 1; m < 4; ++m) {
    coef[m] = m == A ? con43 * c3c4 : c3c4;
    #pragma GCC unroll 5
    for (int n = 0; n < 5; ++n) {
      F[m][n] = 0.0;
      N[m][n] = 0.0;
    }
    if (m == A) {
      F[m][0] = -(un * un * tmp2) + c2 * q;
      F[m][m] = (2.0 - c2) * un * tmp1;
      #pragma GCC unroll 5
      for (int t = 1; t < 4; ++t) {
        if (t != A) F[m][t] = -c2 * u[t] * tmp1;
      }
      F[m][4] = c2;
    } else {
      F[m][0] = -(u[m] * un) * tmp2;
      F[m][m] = un * tmp1;
      F[m][A] = u[m] * tmp1;
    }
    N[m][0] = -coef[m] * tmp2 * u[m];
    N[m][m] = coef[m] * tmp1;
  }
  F[4][0] = (c2 * 2.0 * square - c1 * u[4]) * (un * tmp2);
  #pragma GCC unroll 5
  for (int t = 1; t < 4; ++t) F[4][t] = t == A ? c1 * u[4] * tmp1 - c2 * (un * un * tmp2 + q) : -c2 * (u[t] * un) * tmp2;
  F[4][4] = c1 * un * tmp1;
  N[4][0] = -(coef[1] - c1345) * tmp3 * (u[1] * u[1]) - (coef[2] - c1345) * tmp3 * (u[2] * u[2]) -
            (coef[3] - c1345) * tmp3 * (u[3] * u[3]) - c1345 * tmp2 * u[4];
  #pragma GCC unroll 5
  for (int t = 1; t < 4; ++t) N[4][t] = (coef[t] - c1345) * tmp2 * u[t];
  N[4][4] = c1345 * tmp1;
}

/// b -= A v.
[[gnu::always_inline]] inline void matvec_sub(const Block& A, const double* v, double* b) {
  #pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) {
    b[m] = b[m] - A[m][0] * v[0] - A[m][1] * v[1] - A[m][2] * v[2] - A[m][3] * v[3] - A[m][4] * v[4];
  }
}

/// C -= A B.
[[gnu::always_inline]] inline void matmul_sub(const Block& A, const Block& B, Block& C) {
  #pragma GCC unroll 5
  for (int n = 0; n < 5; ++n) {
    #pragma GCC unroll 5
    for (int m = 0; m < 5; ++m) {
      C[m][n] = C[m][n] - A[m][0] * B[0][n] - A[m][1] * B[1][n] - A[m][2] * B[2][n] - A[m][3] * B[3][n] -
                A[m][4] * B[4][n];
    }
  }
}

/// Gauss-Jordan without pivoting: C <- B^-1 C, r <- B^-1 r (B is destroyed).
[[gnu::always_inline]] inline void binvcrhs(Block& B, Block& C, double* r) {
  #pragma GCC unroll 5
  for (int p = 0; p < 5; ++p) {
    const double pivot = 1.0 / B[p][p];
    #pragma GCC unroll 5
    for (int q = p + 1; q < 5; ++q) B[p][q] *= pivot;
    #pragma GCC unroll 5
    for (int q = 0; q < 5; ++q) C[p][q] *= pivot;
    r[p] *= pivot;
    #pragma GCC unroll 5
    for (int row = 0; row < 5; ++row) {
      if (row == p) continue;
      const double coeff = B[row][p];
      #pragma GCC unroll 5
      for (int q = p + 1; q < 5; ++q) B[row][q] -= coeff * B[p][q];
      #pragma GCC unroll 5
      for (int q = 0; q < 5; ++q) C[row][q] -= coeff * C[p][q];
      r[row] -= coeff * r[p];
    }
  }
}

/// Gauss-Jordan without pivoting: r <- B^-1 r (B is destroyed).
[[gnu::always_inline]] inline void binvrhs(Block& B, double* r) {
  #pragma GCC unroll 5
  for (int p = 0; p < 5; ++p) {
    const double pivot = 1.0 / B[p][p];
    #pragma GCC unroll 5
    for (int q = p + 1; q < 5; ++q) B[p][q] *= pivot;
    r[p] *= pivot;
    #pragma GCC unroll 5
    for (int row = 0; row < 5; ++row) {
      if (row == p) continue;
      const double coeff = B[row][p];
      #pragma GCC unroll 5
      for (int q = p + 1; q < 5; ++q) B[row][q] -= coeff * B[p][q];
      r[row] -= coeff * r[p];
    }
  }
}

}  // namespace hympi::npb
