#pragma once
// Flux Jacobians of the compressible Navier-Stokes equations along one axis, written once for
// BT's x/y/z_solve and LU's jacld/jacu: F = d(inviscid flux)/du, N = d(viscous flux)/du; and the
// 5x5 block operations of BT's line solves. Everything is always inlined and the block loops carry
// unroll hints: with the axis a template argument the zero entries fold away, which is what makes
// these as fast as the reference's written-out blocks.
#include <type_traits>

namespace hympi::npb {

/// 5x5 row-major block of T: double (one point), or a GCC vector of doubles (BT's lines side by side, one per
/// lane).
template <class T>
using BlockOf = T[5][5];

/// A structurally zero entry of a flux Jacobian. It is a type, not 0.0, so a consumer that
/// combines F and N (LU's jacld/jacu) drops the terms of zero entries at compile time.
struct Zero {};

/// The gas constants the flux Jacobians use (BT: c3c4, con43; LU: c3*c4, 4/3).
struct JacobianConstants {
  double c1, c2, c3c4, con43, c1345;
};

/// Calls put(m, n, f, nv) once for every entry (m, n) of the flux Jacobians F (inviscid) and N
/// (viscous) at one point for axis A (1=x, 2=y, 3=z: u[A] is the normal momentum); m and n are
/// std::integral_constant<int, ...>, f and nv a T, a double (an entry the same at every point) or Zero.
/// `rho` = 1/u[0], `q` = kinetic energy per volume / rho (BT's qs), `square` = kinetic energy per volume.
/// T is double (one point) or a GCC vector of doubles (LU's and BT's lanes, one point or line each).
template <int A, class T, class Put>
[[gnu::always_inline]] inline void flux_jacobian_entries(const T* u, const T& rho, const T& q, const T& square,
                                                         const JacobianConstants& k, Put&& put) {
  using I0 = std::integral_constant<int, 0>;
  using IA = std::integral_constant<int, A>;
  using I4 = std::integral_constant<int, 4>;
  // The two tangential momenta.
  using IT1 = std::integral_constant<int, A == 1 ? 2 : 1>;
  using IT2 = std::integral_constant<int, A == 3 ? 2 : 3>;
  constexpr Zero z{};
  const T tmp1 = rho;
  const T tmp2 = tmp1 * tmp1;
  const T tmp3 = tmp1 * tmp2;
  const T un = u[A];
  const double cA = k.con43 * k.c3c4;
  const double cT = k.c3c4;
  const double coef[4] = {0.0, A == 1 ? cA : cT, A == 2 ? cA : cT, A == 3 ? cA : cT};
  // Mass: its flux is the normal momentum.
  put(I0{}, I0{}, z, z);
  put(I0{}, IA{}, 1.0, z);
  put(I0{}, IT1{}, z, z);
  put(I0{}, IT2{}, z, z);
  put(I0{}, I4{}, z, z);
  // Normal momentum.
  put(IA{}, I0{}, -(un * un * tmp2) + k.c2 * q, -cA * tmp2 * un);
  put(IA{}, IA{}, (2.0 - k.c2) * un * tmp1, cA * tmp1);
  put(IA{}, IT1{}, -k.c2 * u[IT1::value] * tmp1, z);
  put(IA{}, IT2{}, -k.c2 * u[IT2::value] * tmp1, z);
  put(IA{}, I4{}, k.c2, z);
  // Tangential momentum T (the other one is O).
  auto tangential = [&](auto t, auto o) __attribute__((always_inline)) {
    const T ut = u[decltype(t)::value];
    put(t, I0{}, -(ut * un) * tmp2, -cT * tmp2 * ut);
    put(t, IA{}, ut * tmp1, z);
    put(t, t, un * tmp1, cT * tmp1);
    put(t, o, z, z);
    put(t, I4{}, z, z);
  };
  tangential(IT1{}, IT2{});
  tangential(IT2{}, IT1{});
  // Energy.
  put(I4{}, I0{}, (k.c2 * 2.0 * square - k.c1 * u[4]) * (un * tmp2),
      -(coef[1] - k.c1345) * tmp3 * (u[1] * u[1]) - (coef[2] - k.c1345) * tmp3 * (u[2] * u[2]) -
          (coef[3] - k.c1345) * tmp3 * (u[3] * u[3]) - k.c1345 * tmp2 * u[4]);
  put(I4{}, IA{}, k.c1 * u[4] * tmp1 - k.c2 * (un * un * tmp2 + q), (cA - k.c1345) * tmp2 * un);
  put(I4{}, IT1{}, -k.c2 * (u[IT1::value] * un) * tmp2, (cT - k.c1345) * tmp2 * u[IT1::value]);
  put(I4{}, IT2{}, -k.c2 * (u[IT2::value] * un) * tmp2, (cT - k.c1345) * tmp2 * u[IT2::value]);
  put(I4{}, I4{}, k.c1 * un * tmp1, k.c1345 * tmp1);
}

/// Sets a block entry to a Jacobian entry: a structural zero is 0, an entry the same at every point (a double)
/// goes to every lane.
template <class T, class V>
[[gnu::always_inline]] inline void set_entry(T& e, const V& v) {
  if constexpr (std::is_same_v<V, Zero>) {
    e = T{};
  } else if constexpr (std::is_same_v<V, T>) {
    e = v;
  } else {
    e = T{} + v;
  }
}

/// Fills F and N at one point (or at each lane's) for axis A, as BT's x/y/z_solve use them (see
/// flux_jacobian_entries).
template <int A, class T>
[[gnu::always_inline]] inline void flux_jacobians(const T* u, const T& rho, const T& q, const T& square,
                                                  const JacobianConstants& k, BlockOf<T>& F, BlockOf<T>& N) {
  auto put = [&](auto m, auto n, const auto& f, const auto& nv) __attribute__((always_inline)) {
    set_entry(F[decltype(m)::value][decltype(n)::value], f);
    set_entry(N[decltype(m)::value][decltype(n)::value], nv);
  };
  flux_jacobian_entries<A>(u, rho, q, square, k, put);
}

/// b -= A v.
template <class T>
[[gnu::always_inline]] inline void matvec_sub(const BlockOf<T>& A, const T* v, T* b) {
  #pragma GCC unroll 5
  for (int m = 0; m < 5; ++m) {
    b[m] = b[m] - A[m][0] * v[0] - A[m][1] * v[1] - A[m][2] * v[2] - A[m][3] * v[3] - A[m][4] * v[4];
  }
}

/// C -= A B.
template <class T>
[[gnu::always_inline]] inline void matmul_sub(const BlockOf<T>& A, const BlockOf<T>& B, BlockOf<T>& C) {
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
template <class T>
[[gnu::always_inline]] inline void binvcrhs(BlockOf<T>& B, BlockOf<T>& C, T* r) {
  #pragma GCC unroll 5
  for (int p = 0; p < 5; ++p) {
    const T pivot = 1.0 / B[p][p];
    #pragma GCC unroll 5
    for (int q = p + 1; q < 5; ++q) B[p][q] *= pivot;
    #pragma GCC unroll 5
    for (int q = 0; q < 5; ++q) C[p][q] *= pivot;
    r[p] *= pivot;
    #pragma GCC unroll 5
    for (int row = 0; row < 5; ++row) {
      if (row == p) continue;
      const T coeff = B[row][p];
      #pragma GCC unroll 5
      for (int q = p + 1; q < 5; ++q) B[row][q] -= coeff * B[p][q];
      #pragma GCC unroll 5
      for (int q = 0; q < 5; ++q) C[row][q] -= coeff * C[p][q];
      r[row] -= coeff * r[p];
    }
  }
}

}  // namespace hympi::npb
