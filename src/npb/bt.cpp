#include "hympi/npb/bt.hpp"

#include "hympi/core/error.hpp"
#include "hympi/npb/jacobian.hpp"

#include <vector>

namespace hympi::npb {

namespace {

// Per-thread scratch of one line: gathered right-hand sides and the eliminated upper blocks.
struct BtLine {
  std::vector<double> r;     // [n][5]
  std::vector<double> cmod;  // [n][25]
  void resize(int n) {
    if (r.size() >= 5 * static_cast<std::size_t>(n)) return;
    r.resize(5 * static_cast<std::size_t>(n));
    cmod.resize(25 * static_cast<std::size_t>(n));
  }
};

// Block-tridiagonal solve of one line of n points along axis A. The blocks of row p are built
// as the forward sweep reaches p, from a rolling window of three Jacobian pairs, so only the
// eliminated upper blocks are stored for the back substitution.
template <int A>
void bt_line(const CfdConstants& c, int n, const double* u, const double* rho, const double* qs, const double* sq,
             std::ptrdiff_t ps, double* rhs, std::ptrdiff_t rs) {
  thread_local BtLine w;
  w.resize(n);
  double t1, t2;
  double dd[5];
  if constexpr (A == 1) {
    t1 = c.dt * c.tx1; t2 = c.dt * c.tx2;
    dd[0] = c.dx1; dd[1] = c.dx2; dd[2] = c.dx3; dd[3] = c.dx4; dd[4] = c.dx5;
  } else if constexpr (A == 2) {
    t1 = c.dt * c.ty1; t2 = c.dt * c.ty2;
    dd[0] = c.dy1; dd[1] = c.dy2; dd[2] = c.dy3; dd[3] = c.dy4; dd[4] = c.dy5;
  } else {
    t1 = c.dt * c.tz1; t2 = c.dt * c.tz2;
    dd[0] = c.dz1; dd[1] = c.dz2; dd[2] = c.dz3; dd[3] = c.dz4; dd[4] = c.dz5;
  }
  double* r = w.r.data();
  auto* cm = reinterpret_cast<Block*>(w.cmod.data());
  for (int p = 0; p < n; ++p) {
    for (int m = 0; m < 5; ++m) r[5 * p + m] = rhs[p * rs + m];
  }
  Block F[3], N[3];
  const JacobianConstants k{c.c1, c.c2, c.c3c4, c.con43, c.c1345};
  auto jac = [&](int p, int slot) __attribute__((always_inline)) {
    flux_jacobians<A>(u + 5 * p * ps, rho[p * ps], qs[p * ps], sq[p * ps], k, F[slot], N[slot]);
  };
  jac(0, 0);
  jac(1, 1);
  // Row 0 is the identity with a zero upper block: r[0] stays, cmod[0] = 0.
  for (int a = 0; a < 5; ++a) {
    for (int b = 0; b < 5; ++b) cm[0][a][b] = 0.0;
  }
  for (int p = 1; p < n - 1; ++p) {
    const int prev = (p - 1) % 3, cur = p % 3, next = (p + 1) % 3;
    jac(p + 1, next);
    Block AA, BB;
    Block& CC = cm[p];
    for (int a = 0; a < 5; ++a) {
      for (int b = 0; b < 5; ++b) {
        AA[a][b] = -t2 * F[prev][a][b] - t1 * N[prev][a][b];
        BB[a][b] = t1 * 2.0 * N[cur][a][b];
        CC[a][b] = t2 * F[next][a][b] - t1 * N[next][a][b];
      }
      AA[a][a] -= t1 * dd[a];
      BB[a][a] += 1.0 + t1 * 2.0 * dd[a];
      CC[a][a] -= t1 * dd[a];
    }
    matvec_sub(AA, r + 5 * (p - 1), r + 5 * p);
    matmul_sub(AA, cm[p - 1], BB);
    binvcrhs(BB, CC, r + 5 * p);
  }
  // Row n-1 is the identity with a zero lower block, so its solution is its right-hand side.
  for (int p = n - 2; p >= 0; --p) {
    double* rp = r + 5 * p;
    const double* rn = r + 5 * (p + 1);
    for (int m = 0; m < 5; ++m) {
      double v = rp[m];
      for (int q = 0; q < 5; ++q) v -= cm[p][m][q] * rn[q];
      rp[m] = v;
    }
  }
  for (int p = 0; p < n; ++p) {
    for (int m = 0; m < 5; ++m) rhs[p * rs + m] = r[5 * p + m];
  }
}

}  // namespace

BtZone::BtZone(const CfdConstants& c, const ZoneDims& dims, const ZonePlacement& placement, int zone)
    : CfdZone(c, dims, false, "BT-MZ", placement, zone) {}

void BtZone::step() {
  const ZoneDims d = f_.d;
  const int nx = d.nx, ny = d.ny, nz = d.nz;
  double* rhs = f_.rhs.data();
  const double* u = f_.u.data();
  const double* rho = f_.rho_i.data();
  const double* qs = f_.qs.data();
  const double* sq = f_.square.data();
  const CfdConstants& c = c_;
  const std::ptrdiff_t sy = d.nxmax, sz = std::ptrdiff_t(d.nxmax) * ny;
#pragma omp parallel
  {
    compute_rhs(c, f_);
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int j = 1; j < ny - 1; ++j) {
        const std::size_t p = d.at(0, j, k);
        bt_line<1>(c, nx, u + 5 * p, rho + p, qs + p, sq + p, 1, rhs + 5 * p, 5);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p = d.at(i, 0, k);
        bt_line<2>(c, ny, u + 5 * p, rho + p, qs + p, sq + p, sy, rhs + 5 * p, 5 * sy);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int j = 1; j < ny - 1; ++j) {
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p = d.at(i, j, 0);
        bt_line<3>(c, nz, u + 5 * p, rho + p, qs + p, sq + p, sz, rhs + 5 * p, 5 * sz);
      }
    }
    add(f_);
  }
}

}  // namespace hympi::npb
