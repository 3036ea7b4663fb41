#include "hympi/npb/sp.hpp"

#include "hympi/core/error.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace hympi::npb {

namespace {

// Per-thread scratch for one line: the three pentadiagonal systems (bands point-major, [n][5])
// and the gathered right-hand sides ([n][5]).
struct SpLine {
  std::vector<double> a, p, m, r, rhon, cv, spd;
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

// Forward elimination step of one pentadiagonal system at row i for right-hand-side components
// [M0, M1): normalise row i, then eliminate it from rows i+1 and i+2.
template <int M0, int M1>
inline void penta_forward(double* l, double* r, int i) {
  double* li = l + 5 * i;
  double* l1 = li + 5;
  double* l2 = li + 10;
  double* ri = r + 5 * i;
  const double fac1 = 1.0 / li[2];
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
inline void penta_close(double* l, double* r, int n) {
  double* li = l + 5 * (n - 2);
  double* l1 = li + 5;
  double* ri = r + 5 * (n - 2);
  const double fac1 = 1.0 / li[2];
  li[3] *= fac1;
  li[4] *= fac1;
  for (int m = M0; m < M1; ++m) ri[m] *= fac1;
  l1[2] -= l1[1] * li[3];
  l1[3] -= l1[1] * li[4];
  for (int m = M0; m < M1; ++m) ri[5 + m] -= l1[1] * ri[m];
  const double fac2 = 1.0 / l1[2];
  for (int m = M0; m < M1; ++m) ri[5 + m] *= fac2;
  for (int m = M0; m < M1; ++m) ri[m] -= li[3] * ri[5 + m];
}

template <int M0, int M1>
inline void penta_back(const double* l, double* r, int i) {
  const double* li = l + 5 * i;
  double* ri = r + 5 * i;
  for (int m = M0; m < M1; ++m) ri[m] = ri[m] - li[3] * ri[5 + m] - li[4] * ri[10 + m];
}

// Solves one line of n points along direction dir (1=x, 2=y, 3=z). `rho`, `vel` and `spd` are
// the scalar fields at the first point with stride ps; `rhs` the 5-vectors with stride rs.
// Components 1-3 share one system, 4 and 5 (the u+c and u-c characteristics) have their own;
// the three independent eliminations are interleaved so their dependency chains overlap.
void sp_line(const CfdConstants& c, int dir, int n, const double* rho, const double* vel, const double* spd,
             std::ptrdiff_t ps, double* rhs, std::ptrdiff_t rs) {
  thread_local SpLine w;
  w.resize(n);
  double dtt1, dtt2, c2dtt1, da, db, dmax, d1;
  if (dir == 1) {
    dtt1 = c.dttx1; dtt2 = c.dttx2; c2dtt1 = c.c2dttx1; da = c.dx2; db = c.dx5; dmax = c.dxmax; d1 = c.dx1;
  } else if (dir == 2) {
    dtt1 = c.dtty1; dtt2 = c.dtty2; c2dtt1 = c.c2dtty1; da = c.dy3; db = c.dy5; dmax = c.dymax; d1 = c.dy1;
  } else {
    dtt1 = c.dttz1; dtt2 = c.dttz2; c2dtt1 = c.c2dttz1; da = c.dz4; db = c.dz5; dmax = c.dzmax; d1 = c.dz1;
  }
  double* r = w.r.data();
  for (int p = 0; p < n; ++p) {
    const double ru1 = c.c3c4 * rho[p * ps];
    w.cv[p] = vel[p * ps];
    w.spd[p] = spd[p * ps];
    w.rhon[p] = std::max(std::max(da + c.con43 * ru1, db + c.c1c5 * ru1), std::max(dmax + ru1, d1));
    const double* src = rhs + p * rs;
    for (int m = 0; m < 5; ++m) r[5 * p + m] = src[m];
  }
  double* A = w.a.data();
  double* P = w.p.data();
  double* M = w.m.data();
  for (int b = 0; b < 5; ++b) {
    A[b] = A[5 * (n - 1) + b] = 0.0;
  }
  A[2] = A[5 * (n - 1) + 2] = 1.0;
  for (int p = 1; p < n - 1; ++p) {
    double* l = A + 5 * p;
    l[0] = 0.0;
    l[1] = -dtt2 * w.cv[p - 1] - dtt1 * w.rhon[p - 1];
    l[2] = 1.0 + c2dtt1 * w.rhon[p];
    l[3] = dtt2 * w.cv[p + 1] - dtt1 * w.rhon[p + 1];
    l[4] = 0.0;
  }
  // Fourth-order dissipation, one-sided next to the boundaries.
  auto add = [&](int p, double v0, double v1, double v2, double v3, double v4) {
    double* l = A + 5 * p;
    l[0] += v0;
    l[1] += v1;
    l[2] += v2;
    l[3] += v3;
    l[4] += v4;
  };
  add(1, 0.0, 0.0, c.comz5, -c.comz4, c.comz1);
  add(2, 0.0, -c.comz4, c.comz6, -c.comz4, c.comz1);
  for (int p = 3; p <= n - 4; ++p) add(p, c.comz1, -c.comz4, c.comz6, -c.comz4, c.comz1);
  add(n - 3, c.comz1, -c.comz4, c.comz6, -c.comz4, 0.0);
  add(n - 2, c.comz1, -c.comz4, c.comz5, 0.0, 0.0);
  for (int p = 0; p < n; ++p) {
    for (int b = 0; b < 5; ++b) P[5 * p + b] = M[5 * p + b] = A[5 * p + b];
  }
  for (int p = 1; p < n - 1; ++p) {
    P[5 * p + 1] = A[5 * p + 1] - dtt2 * w.spd[p - 1];
    P[5 * p + 3] = A[5 * p + 3] + dtt2 * w.spd[p + 1];
    M[5 * p + 1] = A[5 * p + 1] + dtt2 * w.spd[p - 1];
    M[5 * p + 3] = A[5 * p + 3] - dtt2 * w.spd[p + 1];
  }
  for (int i = 0; i <= n - 3; ++i) {
    penta_forward<0, 3>(A, r, i);
    penta_forward<3, 4>(P, r, i);
    penta_forward<4, 5>(M, r, i);
  }
  penta_close<0, 3>(A, r, n);
  penta_close<3, 4>(P, r, n);
  penta_close<4, 5>(M, r, n);
  for (int i = n - 3; i >= 0; --i) {
    penta_back<0, 3>(A, r, i);
    penta_back<3, 4>(P, r, i);
    penta_back<4, 5>(M, r, i);
  }
  for (int p = 0; p < n; ++p) {
    double* dst = rhs + p * rs;
    for (int m = 0; m < 5; ++m) dst[m] = r[5 * p + m];
  }
}

}  // namespace

SpZone::SpZone(const CfdConstants& c, const ZoneDims& dims, const ZonePlacement& placement, int zone)
    : CfdZone(c, dims, true, "SP-MZ", placement, zone) {}

void SpZone::step() {
  const ZoneDims d = f_.d;
  const int nx = d.nx, ny = d.ny, nz = d.nz;
  double* rhs = f_.rhs.data();
  const double* rho_i = f_.rho_i.data();
  const double* us = f_.us.data();
  const double* vs = f_.vs.data();
  const double* ws = f_.ws.data();
  const double* qs = f_.qs.data();
  const double* speed = f_.speed.data();
  const CfdConstants& c = c_;
  const std::ptrdiff_t sy = d.nxmax, sz = std::ptrdiff_t(d.nxmax) * ny;
  // Point-wise transforms are fused into the line sweeps that own their points (txinvr and
  // ninvr into x, pinvr into y, tzetar and the update into z): fewer passes over memory and
  // four barriers per step instead of nine, which matters when cores are shared.
  double* uu = f_.u.data();
#pragma omp parallel
  {
    compute_rhs(c, f_);
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int j = 1; j < ny - 1; ++j) {
        // txinvr: multiply by the inverse of the x-eigenvector matrix.
        for (int i = 1; i < nx - 1; ++i) {
          const std::size_t p = d.at(i, j, k);
          double* r = rhs + 5 * p;
          const double ru1 = rho_i[p], uv = us[p], vv = vs[p], ww = ws[p], ac = speed[p];
          const double ac2inv = 1.0 / (ac * ac);
          const double r1 = r[0], r2 = r[1], r3 = r[2], r4 = r[3], r5 = r[4];
          const double t1 = c.c2 * ac2inv * (qs[p] * r1 - uv * r2 - vv * r3 - ww * r4 + r5);
          const double t2 = c.bt * ru1 * (uv * r1 - r2);
          const double t3 = (c.bt * ru1 * ac) * t1;
          r[0] = r1 - t1;
          r[1] = -ru1 * (ww * r1 - r4);
          r[2] = ru1 * (vv * r1 - r3);
          r[3] = -t2 + t3;
          r[4] = t2 + t3;
        }
        const std::size_t p0 = d.at(0, j, k);
        sp_line(c, 1, nx, rho_i + p0, us + p0, speed + p0, 1, rhs + 5 * p0, 5);
        // ninvr: back from x- to y-eigenvector space.
        for (int i = 1; i < nx - 1; ++i) {
          double* r = rhs + 5 * d.at(i, j, k);
          const double r1 = r[0], r2 = r[1], r3 = r[2], r4 = r[3], r5 = r[4];
          const double t1 = c.bt * r3;
          const double t2 = 0.5 * (r4 + r5);
          r[0] = -r2;
          r[1] = r1;
          r[2] = c.bt * (r4 - r5);
          r[3] = -t1 + t2;
          r[4] = t1 + t2;
        }
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < nz - 1; ++k) {
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p0 = d.at(i, 0, k);
        sp_line(c, 2, ny, rho_i + p0, vs + p0, speed + p0, sy, rhs + 5 * p0, 5 * sy);
        // pinvr: from y- to z-eigenvector space.
        for (int j = 1; j < ny - 1; ++j) {
          double* r = rhs + 5 * d.at(i, j, k);
          const double r1 = r[0], r2 = r[1], r3 = r[2], r4 = r[3], r5 = r[4];
          const double t1 = c.bt * r1;
          const double t2 = 0.5 * (r4 + r5);
          r[0] = c.bt * (r4 - r5);
          r[1] = -r3;
          r[2] = r2;
          r[3] = -t1 + t2;
          r[4] = t1 + t2;
        }
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int j = 1; j < ny - 1; ++j) {
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p0 = d.at(i, j, 0);
        sp_line(c, 3, nz, rho_i + p0, ws + p0, speed + p0, sz, rhs + 5 * p0, 5 * sz);
        // tzetar: back to conserved variables, then the update u += rhs.
        for (int k = 1; k < nz - 1; ++k) {
          const std::size_t p = d.at(i, j, k);
          double* r = rhs + 5 * p;
          double* up = uu + 5 * p;
          const double xvel = us[p], yvel = vs[p], zvel = ws[p], ac = speed[p];
          const double ac2u = ac * ac;
          const double r1 = r[0], r2 = r[1], r3 = r[2], r4 = r[3], r5 = r[4];
          const double uzik1 = up[0];
          const double btuz = c.bt * uzik1;
          const double t1 = btuz / ac * (r4 + r5);
          const double t2 = r3 + t1;
          const double t3 = btuz * (r4 - r5);
          r[0] = t2;
          r[1] = -uzik1 * r2 + xvel * t2;
          r[2] = uzik1 * r1 + yvel * t2;
          r[3] = zvel * t2 + t3;
          r[4] = uzik1 * (-xvel * r2 + yvel * r1) + qs[p] * t2 + c.c2iv * ac2u * t1 + zvel * t3;
          for (int m = 0; m < 5; ++m) up[m] += r[m];
        }
      }
    }
  }
}

}  // namespace hympi::npb
