#include "hympi/npb/bt.hpp"

#include "hympi/core/error.hpp"
#include "hympi/npb/jacobian.hpp"
#include "line_lanes.hpp"

#include <vector>

namespace hympi::npb {

namespace {

using namespace line_lanes;

// Per-thread scratch of one group of lines: gathered right-hand sides and the eliminated upper blocks.
struct BtLines {
  std::vector<Lanes> r;     // [n][5]
  std::vector<Lanes> cmod;  // [n][25]
  void resize(int n) {
    if (r.size() >= 5 * static_cast<std::size_t>(n)) return;
    r.resize(5 * static_cast<std::size_t>(n));
    cmod.resize(25 * static_cast<std::size_t>(n));
  }
};

// Block-tridiagonal solves of a group of lines of n points along axis A, one line per lane (line_lanes.hpp):
// lane l's line starts at point o.at[l] of the scalar fields, its points ps apart. The blocks of row p are built
// as the forward sweep reaches p, from a rolling window of three Jacobian pairs, so only the eliminated upper
// blocks are stored for the back substitution. Every line is solved in a lane, whichever, with the same
// arithmetic, so its bits do not depend on its group or on the thread count.
template <int A>
void bt_lines(const CfdConstants& c, int n, const double* u, const double* rho, const double* qs, const double* sq,
              double* rhs, const LaneOffsets& o, std::ptrdiff_t ps) {
  thread_local BtLines w;
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
  const LaneOffsets o5 = interleaved(o);
  Lanes* r = w.r.data();
  auto* cm = reinterpret_cast<BlockOf<Lanes>*>(w.cmod.data());
  for (int p = 0; p < n; ++p) {
    for (int m = 0; m < 5; ++m) r[5 * p + m] = gather(rhs, o5, 5 * p * ps + m);
  }
  BlockOf<Lanes> F[3], N[3];
  const JacobianConstants k{c.c1, c.c2, c.c3c4, c.con43, c.c1345};
  auto jac = [&](int p, int slot) __attribute__((always_inline)) {
    const std::ptrdiff_t q = p * ps;
    Lanes up[5];
    for (int m = 0; m < 5; ++m) up[m] = gather(u, o5, 5 * q + m);
    const Lanes rq = gather(rho, o, q), qq = gather(qs, o, q), sqq = gather(sq, o, q);
    flux_jacobians<A>(up, rq, qq, sqq, k, F[slot], N[slot]);
  };
  jac(0, 0);
  jac(1, 1);
  // Row 0 is the identity with a zero upper block: r[0] stays, cmod[0] = 0.
  for (int a = 0; a < 5; ++a) {
    for (int b = 0; b < 5; ++b) cm[0][a][b] = Lanes{};
  }
  for (int p = 1; p < n - 1; ++p) {
    const int prev = (p - 1) % 3, cur = p % 3, next = (p + 1) % 3;
    jac(p + 1, next);
    BlockOf<Lanes> AA, BB;
    BlockOf<Lanes>& CC = cm[p];
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
    Lanes* rp = r + 5 * p;
    const Lanes* rn = r + 5 * (p + 1);
    for (int m = 0; m < 5; ++m) {
      Lanes v = rp[m];
      for (int q = 0; q < 5; ++q) v -= cm[p][m][q] * rn[q];
      rp[m] = v;
    }
  }
  for (int p = 0; p < n; ++p) {
    for (int m = 0; m < 5; ++m) scatter(rhs, o5, 5 * p * ps + m, r[5 * p + m]);
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
  // Interior lines across each sweep, in groups of kLanes neighbours: x-lines are grouped along y, y- and z-lines
  // along x (whose points are adjacent in memory).
  const int lx = nx - 2, ly = ny - 2;
  const int gx = (lx + kLanes - 1) / kLanes, gy = (ly + kLanes - 1) / kLanes;
#pragma omp parallel
  {
    compute_rhs(c, f_);
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int g = 0; g < gy; ++g) {
        bt_lines<1>(c, nx, u, rho, qs, sq, rhs, group_offsets(d.at(0, 1, k), g * kLanes, ly, sy), 1);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int g = 0; g < gx; ++g) {
        bt_lines<2>(c, ny, u, rho, qs, sq, rhs, group_offsets(d.at(1, 0, k), g * kLanes, lx, 1), sy);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int j = 1; j < ny - 1; ++j) {
      for (int g = 0; g < gx; ++g) {
        bt_lines<3>(c, nz, u, rho, qs, sq, rhs, group_offsets(d.at(1, j, 0), g * kLanes, lx, 1), sz);
      }
    }
    add(f_);
  }
}

}  // namespace hympi::npb
