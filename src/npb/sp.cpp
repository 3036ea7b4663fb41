#include "hympi/npb/sp.hpp"

#include "hympi/core/error.hpp"
#include "line_lanes.hpp"

#include <algorithm>
#include <cstddef>
#include <vector>

namespace hympi::npb {

namespace {

using namespace line_lanes;

// Per-thread scratch for one group of lines, all [point][band or component] of Lanes: the three
// pentadiagonal systems (components 1-3, u+c, u-c), the right-hand sides and the line scalars.
struct SpLines {
  std::vector<Lanes> a, p, m, r, rhon, cv, spd;
  void resize(int n) {
    const auto sn = static_cast<std::size_t>(n);
    if (rhon.size() >= sn) return;
    a.resize(5 * sn);
    p.resize(5 * sn);
    m.resize(5 * sn);
    r.resize(5 * sn);
    rhon.resize(sn);
    cv.resize(sn);
    spd.resize(sn);
  }
};

// std::max lane by lane (the second operand when the first is smaller, as std::max).
[[gnu::always_inline]] inline Lanes lane_max(Lanes a, Lanes b) { return a < b ? b : a; }

// Forward elimination step of one pentadiagonal system at row i for right-hand-side components
// [M0, M1): normalise row i, then eliminate it from rows i+1 and i+2.
template <int M0, int M1>
[[gnu::always_inline]] inline void penta_forward(Lanes* l, Lanes* r, int i) {
  Lanes* li = l + 5 * i;
  Lanes* l1 = li + 5;
  Lanes* l2 = li + 10;
  Lanes* ri = r + 5 * i;
  const Lanes fac1 = 1.0 / li[2];
  li[3] *= fac1;
  li[4] *= fac1;
  for (int m = M0; m < M1; ++m) ri[m] *= fac1;
  l1[2] -= l1[1] * li[3];
  l1[3] -= l1[1] * li[4];
  for (int m = M0; m < M1; ++m) ri[5 + m] -= l1[1] * ri[m];
  l2[1] -= l2[0] * li[3];
  l2[2] -= l2[0] * li[4];
  for (int m = M0; m < M1; ++m) ri[10 + m] -= l2[0] * ri[m];
}

// The last two rows: normalise row n-2, eliminate it from row n-1, normalise row n-1, and start
// the back substitution at row n-2.
template <int M0, int M1>
[[gnu::always_inline]] inline void penta_close(Lanes* l, Lanes* r, int n) {
  Lanes* li = l + 5 * (n - 2);
  Lanes* l1 = li + 5;
  Lanes* ri = r + 5 * (n - 2);
  const Lanes fac1 = 1.0 / li[2];
  li[3] *= fac1;
  li[4] *= fac1;
  for (int m = M0; m < M1; ++m) ri[m] *= fac1;
  l1[2] -= l1[1] * li[3];
  l1[3] -= l1[1] * li[4];
  for (int m = M0; m < M1; ++m) ri[5 + m] -= l1[1] * ri[m];
  const Lanes fac2 = 1.0 / l1[2];
  for (int m = M0; m < M1; ++m) ri[5 + m] *= fac2;
  for (int m = M0; m < M1; ++m) ri[m] -= li[3] * ri[5 + m];
}

template <int M0, int M1>
[[gnu::always_inline]] inline void penta_back(const Lanes* l, Lanes* r, int i) {
  const Lanes* li = l + 5 * i;
  Lanes* ri = r + 5 * i;
  for (int m = M0; m < M1; ++m) ri[m] = ri[m] - li[3] * ri[5 + m] - li[4] * ri[10 + m];
}

// The fields of a zone one sweep reads and writes.
struct SpFields {
  double* u;
  double* rhs;
  const double *rho_i, *us, *vs, *ws, *qs, *speed;
};

// Solves up to kLanes lines of n points along axis A (1=x, 2=y, 3=z), point stride ps in a
// scalar field; `o` gives each lane's first point. Components 1-3 share one system, 4 and 5 (the
// u+c and u-c characteristics) have their own; the three eliminations are interleaved so their
// dependency chains overlap. The point-wise eigenvector transforms around the solve are applied
// here, on the lines while they are in registers and L1: txinvr before and ninvr after x, pinvr
// after y, tzetar and the update u += rhs after z.
template <int A>
void sp_lines(const CfdConstants& c, const SpFields& f, const LaneOffsets& o, int n, std::ptrdiff_t ps) {
  thread_local SpLines w;
  w.resize(n);
  double dtt1, dtt2, c2dtt1, da, db, dmax, d1;
  const double* vel;
  if constexpr (A == 1) {
    dtt1 = c.dttx1; dtt2 = c.dttx2; c2dtt1 = c.c2dttx1; da = c.dx2; db = c.dx5; dmax = c.dxmax; d1 = c.dx1;
    vel = f.us;
  } else if constexpr (A == 2) {
    dtt1 = c.dtty1; dtt2 = c.dtty2; c2dtt1 = c.c2dtty1; da = c.dy3; db = c.dy5; dmax = c.dymax; d1 = c.dy1;
    vel = f.vs;
  } else {
    dtt1 = c.dttz1; dtt2 = c.dttz2; c2dtt1 = c.c2dttz1; da = c.dz4; db = c.dz5; dmax = c.dzmax; d1 = c.dz1;
    vel = f.ws;
  }
  const LaneOffsets o5 = interleaved(o);
  Lanes* r = w.r.data();
  Lanes* rhon = w.rhon.data();
  Lanes* cv = w.cv.data();
  Lanes* spd = w.spd.data();
  const Lanes d1v = Lanes{} + d1;
  for (int p = 0; p < n; ++p) {
    const std::ptrdiff_t q = p * ps;
    const Lanes rho = gather(f.rho_i, o, q);
    const Lanes ru1 = c.c3c4 * rho;
    cv[p] = gather(vel, o, q);
    spd[p] = gather(f.speed, o, q);
    rhon[p] = lane_max(lane_max(da + c.con43 * ru1, db + c.c1c5 * ru1), lane_max(dmax + ru1, d1v));
    Lanes* rp = r + 5 * p;
    for (int m = 0; m < 5; ++m) rp[m] = gather(f.rhs, o5, 5 * q + m);
    if constexpr (A == 1) {
      if (p == 0 || p == n - 1) continue;
      // txinvr: multiply by the inverse of the x-eigenvector matrix.
      const Lanes uv = cv[p], vv = gather(f.vs, o, q), ww = gather(f.ws, o, q), ac = spd[p];
      const Lanes qv = gather(f.qs, o, q);
      const Lanes ac2inv = 1.0 / (ac * ac);
      const Lanes r1 = rp[0], r2 = rp[1], r3 = rp[2], r4 = rp[3], r5 = rp[4];
      const Lanes t1 = c.c2 * ac2inv * (qv * r1 - uv * r2 - vv * r3 - ww * r4 + r5);
      const Lanes t2 = c.bt * rho * (uv * r1 - r2);
      const Lanes t3 = (c.bt * rho * ac) * t1;
      rp[0] = r1 - t1;
      rp[1] = -rho * (ww * r1 - r4);
      rp[2] = rho * (vv * r1 - r3);
      rp[3] = -t2 + t3;
      rp[4] = t2 + t3;
    }
  }
  Lanes* Ab = w.a.data();
  Lanes* P = w.p.data();
  Lanes* M = w.m.data();
  // Boundary rows are the identity in all three systems.
  const Lanes zero{};
  for (const int p : {0, n - 1}) {
    for (int b = 0; b < 5; ++b) Ab[5 * p + b] = P[5 * p + b] = M[5 * p + b] = zero;
    Ab[5 * p + 2] = P[5 * p + 2] = M[5 * p + 2] = zero + 1.0;
  }
  // Interior row p of all three systems, with the fourth-order dissipation (v0..v4) added to the
  // components-1-3 bands before the u+c and u-c systems are derived from them, as in the reference.
  auto row = [&](int p, double v0, double v1, double v2, double v3, double v4) __attribute__((always_inline)) {
    const Lanes l1 = (-dtt2 * cv[p - 1] - dtt1 * rhon[p - 1]) + v1;
    const Lanes l2 = (1.0 + c2dtt1 * rhon[p]) + v2;
    const Lanes l3 = (dtt2 * cv[p + 1] - dtt1 * rhon[p + 1]) + v3;
    const Lanes l0 = zero + v0, l4 = zero + v4;
    Lanes* a = Ab + 5 * p;
    Lanes* pp = P + 5 * p;
    Lanes* mm = M + 5 * p;
    a[0] = pp[0] = mm[0] = l0;
    a[1] = l1;
    a[2] = pp[2] = mm[2] = l2;
    a[3] = l3;
    a[4] = pp[4] = mm[4] = l4;
    pp[1] = l1 - dtt2 * spd[p - 1];
    pp[3] = l3 + dtt2 * spd[p + 1];
    mm[1] = l1 + dtt2 * spd[p - 1];
    mm[3] = l3 - dtt2 * spd[p + 1];
  };
  row(1, 0.0, 0.0, c.comz5, -c.comz4, c.comz1);
  row(2, 0.0, -c.comz4, c.comz6, -c.comz4, c.comz1);
  for (int p = 3; p <= n - 4; ++p) row(p, c.comz1, -c.comz4, c.comz6, -c.comz4, c.comz1);
  row(n - 3, c.comz1, -c.comz4, c.comz6, -c.comz4, 0.0);
  row(n - 2, c.comz1, -c.comz4, c.comz5, 0.0, 0.0);
  for (int i = 0; i <= n - 3; ++i) {
    penta_forward<0, 3>(Ab, r, i);
    penta_forward<3, 4>(P, r, i);
    penta_forward<4, 5>(M, r, i);
  }
  penta_close<0, 3>(Ab, r, n);
  penta_close<3, 4>(P, r, n);
  penta_close<4, 5>(M, r, n);
  for (int i = n - 3; i >= 0; --i) {
    penta_back<0, 3>(Ab, r, i);
    penta_back<3, 4>(P, r, i);
    penta_back<4, 5>(M, r, i);
  }
  for (int p = 0; p < n; ++p) {
    const std::ptrdiff_t q = p * ps;
    Lanes* rp = r + 5 * p;
    if (p > 0 && p < n - 1) {
      const Lanes r1 = rp[0], r2 = rp[1], r3 = rp[2], r4 = rp[3], r5 = rp[4];
      if constexpr (A == 1) {
        // ninvr: back from x- to y-eigenvector space.
        const Lanes t1 = c.bt * r3;
        const Lanes t2 = 0.5 * (r4 + r5);
        rp[0] = -r2;
        rp[1] = r1;
        rp[2] = c.bt * (r4 - r5);
        rp[3] = -t1 + t2;
        rp[4] = t1 + t2;
      } else if constexpr (A == 2) {
        // pinvr: from y- to z-eigenvector space.
        const Lanes t1 = c.bt * r1;
        const Lanes t2 = 0.5 * (r4 + r5);
        rp[0] = c.bt * (r4 - r5);
        rp[1] = -r3;
        rp[2] = r2;
        rp[3] = -t1 + t2;
        rp[4] = t1 + t2;
      } else {
        // tzetar: back to conserved variables, then the update u += rhs.
        const Lanes xvel = gather(f.us, o, q), yvel = gather(f.vs, o, q), zvel = cv[p], ac = spd[p];
        const Lanes ac2u = ac * ac;
        const Lanes uzik1 = gather(f.u, o5, 5 * q);
        const Lanes btuz = c.bt * uzik1;
        const Lanes t1 = btuz / ac * (r4 + r5);
        const Lanes t2 = r3 + t1;
        const Lanes t3 = btuz * (r4 - r5);
        rp[0] = t2;
        rp[1] = -uzik1 * r2 + xvel * t2;
        rp[2] = uzik1 * r1 + yvel * t2;
        rp[3] = zvel * t2 + t3;
        rp[4] = uzik1 * (-xvel * r2 + yvel * r1) + gather(f.qs, o, q) * t2 + c.c2iv * ac2u * t1 + zvel * t3;
        // Every lane updates u from the value it gathered, so a repeated lane stores the same sum.
        for (int m = 0; m < 5; ++m) scatter(f.u, o5, 5 * q + m, gather(f.u, o5, 5 * q + m) + rp[m]);
      }
    }
    for (int m = 0; m < 5; ++m) scatter(f.rhs, o5, 5 * q + m, rp[m]);
  }
}

}  // namespace

SpZone::SpZone(const CfdConstants& c, const ZoneDims& dims, const ZonePlacement& placement, int zone)
    : CfdZone(c, dims, true, "SP-MZ", placement, zone) {}

void SpZone::step() {
  const ZoneDims d = f_.d;
  const int nx = d.nx, ny = d.ny, nz = d.nz;
  const CfdConstants& c = c_;
  const SpFields f{f_.u.data(), f_.rhs.data(), f_.rho_i.data(), f_.us.data(), f_.vs.data(),
                   f_.ws.data(), f_.qs.data(), f_.speed.data()};
  const std::ptrdiff_t sy = d.nxmax, sz = std::ptrdiff_t(d.nxmax) * ny;
  // Interior lines across each sweep, in groups of kLanes neighbours: x-lines are grouped along
  // y, y- and z-lines along x (whose points are adjacent in memory).
  const int lx = nx - 2, ly = ny - 2;
  const int gx = (lx + kLanes - 1) / kLanes, gy = (ly + kLanes - 1) / kLanes;
  // Point-wise transforms are fused into the line sweeps (see sp_lines): fewer passes over memory
  // and four barriers per step instead of nine, which matters when cores are shared.
#pragma omp parallel
  {
    compute_rhs(c, f_);
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int g = 0; g < gy; ++g) {
        sp_lines<1>(c, f, group_offsets(d.at(0, 1, k), g * kLanes, ly, sy), nx, 1);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int g = 0; g < gx; ++g) {
        sp_lines<2>(c, f, group_offsets(d.at(1, 0, k), g * kLanes, lx, 1), ny, sy);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int j = 1; j < ny - 1; ++j) {
      for (int g = 0; g < gx; ++g) {
        sp_lines<3>(c, f, group_offsets(d.at(1, j, 0), g * kLanes, lx, 1), nz, sz);
      }
    }
  }
}

}  // namespace hympi::npb
