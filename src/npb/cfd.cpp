#include "hympi/npb/cfd.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/npb/dissipation.hpp"

namespace hympi::npb {

CfdConstants CfdConstants::make(const ZoneGeometry& g, double dt) {
  CfdConstants c{};
  static constexpr double ce[5][13] = {
      {2.0, 0.0, 0.0, 4.0, 5.0, 3.0, 0.5, 0.02, 0.01, 0.03, 0.5, 0.4, 0.3},
      {1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.01, 0.03, 0.02, 0.4, 0.3, 0.5},
      {2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.04, 0.03, 0.05, 0.3, 0.5, 0.4},
      {2.0, 2.0, 0.0, 0.0, 0.0, 2.0, 3.0, 0.03, 0.05, 0.04, 0.2, 0.1, 0.3},
      {5.0, 4.0, 3.0, 2.0, 0.1, 0.4, 0.3, 0.05, 0.04, 0.03, 0.1, 0.3, 0.2}};
  for (int m = 0; m < 5; ++m) {
    for (int n = 0; n < 13; ++n) c.ce[m][n] = ce[m][n];
  }
  c.c1 = 1.4;
  c.c2 = 0.4;
  c.c3 = 0.1;
  c.c4 = 1.0;
  c.c5 = 1.4;
  c.bt = std::sqrt(0.5);
  // Every zone uses the spacing of an average zone, so zone coordinates run past 1 in big zones.
  c.dnxm1 = 1.0 / (double(g.gx_size - 1) / double(g.x_zones));
  c.dnym1 = 1.0 / (double(g.gy_size - 1) / double(g.y_zones));
  c.dnzm1 = 1.0 / double(g.gz_size - 1);
  c.c1c2 = c.c1 * c.c2;
  c.c1c5 = c.c1 * c.c5;
  c.c3c4 = c.c3 * c.c4;
  c.c1345 = c.c1c5 * c.c3c4;
  c.conz1 = 1.0 - c.c1c5;
  c.tx1 = 1.0 / (c.dnxm1 * c.dnxm1);
  c.tx2 = 1.0 / (2.0 * c.dnxm1);
  c.tx3 = 1.0 / c.dnxm1;
  c.ty1 = 1.0 / (c.dnym1 * c.dnym1);
  c.ty2 = 1.0 / (2.0 * c.dnym1);
  c.ty3 = 1.0 / c.dnym1;
  c.tz1 = 1.0 / (c.dnzm1 * c.dnzm1);
  c.tz2 = 1.0 / (2.0 * c.dnzm1);
  c.tz3 = 1.0 / c.dnzm1;
  c.dx1 = c.dx2 = c.dx3 = c.dx4 = c.dx5 = 0.75;
  c.dy1 = c.dy2 = c.dy3 = c.dy4 = c.dy5 = 0.75;
  c.dz1 = c.dz2 = c.dz3 = c.dz4 = c.dz5 = 1.0;
  c.dxmax = std::max(c.dx3, c.dx4);
  c.dymax = std::max(c.dy2, c.dy4);
  c.dzmax = std::max(c.dz2, c.dz3);
  c.dssp = 0.25 * std::max(c.dx1, std::max(c.dy1, c.dz1));
  c.c4dssp = 4.0 * c.dssp;
  c.c5dssp = 5.0 * c.dssp;
  c.dt = dt;
  c.dttx1 = dt * c.tx1;
  c.dttx2 = dt * c.tx2;
  c.dtty1 = dt * c.ty1;
  c.dtty2 = dt * c.ty2;
  c.dttz1 = dt * c.tz1;
  c.dttz2 = dt * c.tz2;
  c.c2dttx1 = 2.0 * c.dttx1;
  c.c2dtty1 = 2.0 * c.dtty1;
  c.c2dttz1 = 2.0 * c.dttz1;
  c.dtdssp = dt * c.dssp;
  c.comz1 = c.dtdssp;
  c.comz4 = 4.0 * c.dtdssp;
  c.comz5 = 5.0 * c.dtdssp;
  c.comz6 = 6.0 * c.dtdssp;
  c.c3c4tx3 = c.c3c4 * c.tx3;
  c.c3c4ty3 = c.c3c4 * c.ty3;
  c.c3c4tz3 = c.c3c4 * c.tz3;
  c.dx1tx1 = c.dx1 * c.tx1;
  c.dx2tx1 = c.dx2 * c.tx1;
  c.dx3tx1 = c.dx3 * c.tx1;
  c.dx4tx1 = c.dx4 * c.tx1;
  c.dx5tx1 = c.dx5 * c.tx1;
  c.dy1ty1 = c.dy1 * c.ty1;
  c.dy2ty1 = c.dy2 * c.ty1;
  c.dy3ty1 = c.dy3 * c.ty1;
  c.dy4ty1 = c.dy4 * c.ty1;
  c.dy5ty1 = c.dy5 * c.ty1;
  c.dz1tz1 = c.dz1 * c.tz1;
  c.dz2tz1 = c.dz2 * c.tz1;
  c.dz3tz1 = c.dz3 * c.tz1;
  c.dz4tz1 = c.dz4 * c.tz1;
  c.dz5tz1 = c.dz5 * c.tz1;
  c.c2iv = 2.5;
  c.con43 = 4.0 / 3.0;
  c.con16 = 1.0 / 6.0;
  c.xxcon1 = c.c3c4tx3 * c.con43 * c.tx3;
  c.xxcon2 = c.c3c4tx3 * c.tx3;
  c.xxcon3 = c.c3c4tx3 * c.conz1 * c.tx3;
  c.xxcon4 = c.c3c4tx3 * c.con16 * c.tx3;
  c.xxcon5 = c.c3c4tx3 * c.c1c5 * c.tx3;
  c.yycon1 = c.c3c4ty3 * c.con43 * c.ty3;
  c.yycon2 = c.c3c4ty3 * c.ty3;
  c.yycon3 = c.c3c4ty3 * c.conz1 * c.ty3;
  c.yycon4 = c.c3c4ty3 * c.con16 * c.ty3;
  c.yycon5 = c.c3c4ty3 * c.c1c5 * c.ty3;
  c.zzcon1 = c.c3c4tz3 * c.con43 * c.tz3;
  c.zzcon2 = c.c3c4tz3 * c.tz3;
  c.zzcon3 = c.c3c4tz3 * c.conz1 * c.tz3;
  c.zzcon4 = c.c3c4tz3 * c.con16 * c.tz3;
  c.zzcon5 = c.c3c4tz3 * c.c1c5 * c.tz3;
  return c;
}

void CfdConstants::exact_solution(double xi, double eta, double zeta, double out[5]) const noexcept {
  for (int m = 0; m < 5; ++m) {
    const auto& e = ce[m];
    out[m] = e[0] + xi * (e[1] + xi * (e[4] + xi * (e[7] + xi * e[10]))) +
             eta * (e[2] + eta * (e[5] + eta * (e[8] + eta * e[11]))) +
             zeta * (e[3] + zeta * (e[6] + zeta * (e[9] + zeta * e[12])));
  }
}

CfdZoneFields::CfdZoneFields(const ZoneDims& dims, bool with_speed, const ZonePlacement& placement, int zone)
    : d(dims),
      u(placement.array(std::size_t(dims.nz) * dims.ny, 5 * std::size_t(dims.nxmax), zone, 0)),
      rhs(placement.array(std::size_t(dims.nz) * dims.ny, 5 * std::size_t(dims.nxmax), zone, 1)),
      forcing(placement.array(std::size_t(dims.nz) * dims.ny, 5 * std::size_t(dims.nxmax), zone, 2)),
      us(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 3)),
      vs(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 4)),
      ws(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 5)),
      qs(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 6)),
      rho_i(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 7)),
      square(placement.array(std::size_t(dims.nz) * dims.ny, dims.nxmax, zone, 8)),
      speed(placement.array(with_speed ? std::size_t(dims.nz) * dims.ny : 0, dims.nxmax, zone, 9)) {}

void initialize_field(const CfdConstants& c, CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  double* u = f.u.data();
#pragma omp parallel for collapse(2) schedule(static)
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      const double zeta = k * c.dnzm1;
      const double eta = j * c.dnym1;
      for (int i = 0; i < d.nx; ++i) {
        const double xi = i * c.dnxm1;
        double face[3][2][5];
        for (int s = 0; s < 2; ++s) {
          c.exact_solution(double(s), eta, zeta, face[0][s]);
          c.exact_solution(xi, double(s), zeta, face[1][s]);
          c.exact_solution(xi, eta, double(s), face[2][s]);
        }
        double* p = u + 5 * d.at(i, j, k);
        for (int m = 0; m < 5; ++m) {
          const double pxi = xi * face[0][1][m] + (1.0 - xi) * face[0][0][m];
          const double peta = eta * face[1][1][m] + (1.0 - eta) * face[1][0][m];
          const double pzeta = zeta * face[2][1][m] + (1.0 - zeta) * face[2][0][m];
          p[m] = pxi + peta + pzeta - pxi * peta - pxi * pzeta - peta * pzeta + pxi * peta * pzeta;
        }
      }
    }
  }
  // Boundary faces get the exact solution, in the reference's order (later faces win at edges).
  auto set = [&](int i, int j, int k, double xi, double eta, double zeta) {
    c.exact_solution(xi, eta, zeta, u + 5 * d.at(i, j, k));
  };
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) set(0, j, k, 0.0, j * c.dnym1, k * c.dnzm1);
  }
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) set(d.nx - 1, j, k, 1.0, j * c.dnym1, k * c.dnzm1);
  }
  for (int k = 0; k < d.nz; ++k) {
    for (int i = 0; i < d.nx; ++i) set(i, 0, k, i * c.dnxm1, 0.0, k * c.dnzm1);
  }
  for (int k = 0; k < d.nz; ++k) {
    for (int i = 0; i < d.nx; ++i) set(i, d.ny - 1, k, i * c.dnxm1, 1.0, k * c.dnzm1);
  }
  for (int j = 0; j < d.ny; ++j) {
    for (int i = 0; i < d.nx; ++i) set(i, j, 0, i * c.dnxm1, j * c.dnym1, 0.0);
  }
  for (int j = 0; j < d.ny; ++j) {
    for (int i = 0; i < d.nx; ++i) set(i, j, d.nz - 1, i * c.dnxm1, j * c.dnym1, 1.0);
  }
}

namespace {

// Dissipation along a whole row of interior points (i = 1..nx-2, all five components) for the
// stencil position p of n along the axis with stride s: the form is the same for the entire row
// in y and z, and in x it is split into runs, so every loop below is a straight vectorisable sweep.
inline void row_dissipation(double* r, const double* u, std::ptrdiff_t s, int p, int n, int nx, double dssp) {
  const int lo = 5;
  const int hi = 5 * (nx - 1);
  switch (dissipation_form(p, n)) {
    case DissipationForm::first: subtract_dissipation<DissipationForm::first>(r, u, s, lo, hi, dssp); break;
    case DissipationForm::second: subtract_dissipation<DissipationForm::second>(r, u, s, lo, hi, dssp); break;
    case DissipationForm::second_last:
      subtract_dissipation<DissipationForm::second_last>(r, u, s, lo, hi, dssp);
      break;
    case DissipationForm::last: subtract_dissipation<DissipationForm::last>(r, u, s, lo, hi, dssp); break;
    case DissipationForm::interior: subtract_dissipation<DissipationForm::interior>(r, u, s, lo, hi, dssp); break;
  }
}

// x-direction dissipation of one row: runs of points with the same one-sided or central form.
inline void x_dissipation(double* r, const double* u, int nx, double dssp) {
  subtract_dissipation<DissipationForm::first>(r, u, 5, 5, 10, dssp);
  subtract_dissipation<DissipationForm::second>(r, u, 5, 10, 15, dssp);
  subtract_dissipation<DissipationForm::interior>(r, u, 5, 15, 5 * (nx - 3), dssp);
  subtract_dissipation<DissipationForm::second_last>(r, u, 5, 5 * (nx - 3), 5 * (nx - 2), dssp);
  subtract_dissipation<DissipationForm::last>(r, u, 5, 5 * (nx - 2), 5 * (nx - 1), dssp);
}

// One line of the forcing computation along a direction: `ue` holds the exact solution on the
// line (n points, 5 components, component-major), `dir` is 1, 2, 3 for x, y, z.
void forcing_line(const CfdConstants& c, int dir, int n, const double* ue, double* buf, double* cuf, double* q,
                  double* out, std::ptrdiff_t stride) {
  // buf[0..4][p]: buf[0] = squared speed, buf[1..3] = velocities, buf[4] = energy / rho.
  const int nn = n;
  for (int p = 0; p < nn; ++p) {
    const double dtpp = 1.0 / ue[0 * nn + p];
    for (int m = 1; m < 5; ++m) buf[m * nn + p] = dtpp * ue[m * nn + p];
    cuf[p] = buf[dir * nn + p] * buf[dir * nn + p];
    buf[0 * nn + p] = buf[1 * nn + p] * buf[1 * nn + p] + buf[2 * nn + p] * buf[2 * nn + p] +
                      buf[3 * nn + p] * buf[3 * nn + p];
    q[p] = 0.5 * (buf[1 * nn + p] * ue[1 * nn + p] + buf[2 * nn + p] * ue[2 * nn + p] +
                  buf[3 * nn + p] * ue[3 * nn + p]);
  }
  double t2, d1, d2, d3, d4, d5, con1, con2, con3, con4, con5;
  if (dir == 1) {
    t2 = c.tx2; d1 = c.dx1tx1; d2 = c.dx2tx1; d3 = c.dx3tx1; d4 = c.dx4tx1; d5 = c.dx5tx1;
    con1 = c.xxcon1; con2 = c.xxcon2; con3 = c.xxcon3; con4 = c.xxcon4; con5 = c.xxcon5;
  } else if (dir == 2) {
    t2 = c.ty2; d1 = c.dy1ty1; d2 = c.dy2ty1; d3 = c.dy3ty1; d4 = c.dy4ty1; d5 = c.dy5ty1;
    con1 = c.yycon1; con2 = c.yycon2; con3 = c.yycon3; con4 = c.yycon4; con5 = c.yycon5;
  } else {
    t2 = c.tz2; d1 = c.dz1tz1; d2 = c.dz2tz1; d3 = c.dz3tz1; d4 = c.dz4tz1; d5 = c.dz5tz1;
    con1 = c.zzcon1; con2 = c.zzcon2; con3 = c.zzcon3; con4 = c.zzcon4; con5 = c.zzcon5;
  }
  const double dd[5] = {d1, d2, d3, d4, d5};
  auto U = [&](int m, int p) { return ue[m * nn + p]; };
  auto B = [&](int m, int p) { return buf[m * nn + p]; };
  for (int p = 1; p < nn - 1; ++p) {
    double* f = out + p * stride;
    const int a = p - 1;
    const int b = p + 1;
    // Mass flux along the line, then the normal and tangential momenta and the energy.
    f[0] += -t2 * (U(dir, b) - U(dir, a)) + dd[0] * (U(0, b) - 2.0 * U(0, p) + U(0, a));
    for (int m = 1; m < 4; ++m) {
      double flux;
      double visc;
      if (m == dir) {
        flux = (U(m, b) * B(dir, b) + c.c2 * (U(4, b) - q[b])) - (U(m, a) * B(dir, a) + c.c2 * (U(4, a) - q[a]));
        visc = con1 * (B(m, b) - 2.0 * B(m, p) + B(m, a));
      } else {
        flux = U(m, b) * B(dir, b) - U(m, a) * B(dir, a);
        visc = con2 * (B(m, b) - 2.0 * B(m, p) + B(m, a));
      }
      f[m] += -t2 * flux + visc + dd[m] * (U(m, b) - 2.0 * U(m, p) + U(m, a));
    }
    f[4] += -t2 * (B(dir, b) * (c.c1 * U(4, b) - c.c2 * q[b]) - B(dir, a) * (c.c1 * U(4, a) - c.c2 * q[a])) +
            0.5 * con3 * (B(0, b) - 2.0 * B(0, p) + B(0, a)) + con4 * (cuf[b] - 2.0 * cuf[p] + cuf[a]) +
            con5 * (B(4, b) - 2.0 * B(4, p) + B(4, a)) + dd[4] * (U(4, b) - 2.0 * U(4, p) + U(4, a));
  }
  for (int m = 0; m < 5; ++m) {
    for (int p = 1; p < nn - 1; ++p) out[p * stride + m] -= c.dssp * dissipation(ue + m * nn + p, 1, p, nn);
  }
}

}  // namespace

void exact_rhs(const CfdConstants& c, CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  double* forcing = f.forcing.data();
  std::fill(f.forcing.begin(), f.forcing.end(), 0.0);
  const int nmax = std::max({d.nx, d.ny, d.nz});
#pragma omp parallel
  {
    std::vector<double> ue(5 * nmax), buf(5 * nmax), cuf(nmax), q(nmax);
    double tmp[5];
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < d.nz - 1; ++k) {
      for (int j = 1; j < d.ny - 1; ++j) {
        for (int i = 0; i < d.nx; ++i) {
          c.exact_solution(i * c.dnxm1, j * c.dnym1, k * c.dnzm1, tmp);
          for (int m = 0; m < 5; ++m) ue[m * d.nx + i] = tmp[m];
        }
        forcing_line(c, 1, d.nx, ue.data(), buf.data(), cuf.data(), q.data(), forcing + 5 * d.at(0, j, k), 5);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < d.nz - 1; ++k) {
      for (int i = 1; i < d.nx - 1; ++i) {
        for (int j = 0; j < d.ny; ++j) {
          c.exact_solution(i * c.dnxm1, j * c.dnym1, k * c.dnzm1, tmp);
          for (int m = 0; m < 5; ++m) ue[m * d.ny + j] = tmp[m];
        }
        forcing_line(c, 2, d.ny, ue.data(), buf.data(), cuf.data(), q.data(), forcing + 5 * d.at(i, 0, k),
                     5 * std::ptrdiff_t(d.nxmax));
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int j = 1; j < d.ny - 1; ++j) {
      for (int i = 1; i < d.nx - 1; ++i) {
        for (int k = 0; k < d.nz; ++k) {
          c.exact_solution(i * c.dnxm1, j * c.dnym1, k * c.dnzm1, tmp);
          for (int m = 0; m < 5; ++m) ue[m * d.nz + k] = tmp[m];
        }
        forcing_line(c, 3, d.nz, ue.data(), buf.data(), cuf.data(), q.data(), forcing + 5 * d.at(i, j, 0),
                     5 * std::ptrdiff_t(d.nxmax) * d.ny);
      }
    }
#pragma omp for collapse(2) schedule(static)
    for (int k = 1; k < d.nz - 1; ++k) {
      for (int j = 1; j < d.ny - 1; ++j) {
        double* p = forcing + 5 * d.at(0, j, k);
        for (int i = 5; i < 5 * (d.nx - 1); ++i) p[i] = -p[i];
      }
    }
  }
}

void compute_rhs(const CfdConstants& c, CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  const int nx = d.nx, ny = d.ny, nz = d.nz;
  const double* u = f.u.data();
  double* rhs = f.rhs.data();
  const double* forcing = f.forcing.data();
  double* us = f.us.data();
  double* vs = f.vs.data();
  double* ws = f.ws.data();
  double* qs = f.qs.data();
  double* rho_i = f.rho_i.data();
  double* square = f.square.data();
  double* speed = f.speed.empty() ? nullptr : f.speed.data();
  const std::ptrdiff_t sx = 5, sy = 5 * std::ptrdiff_t(d.nxmax), sz = sy * ny;
  const std::ptrdiff_t px = 1, py = d.nxmax, pz = py * ny;

#pragma omp for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k) {
    for (int j = 0; j < ny; ++j) {
      for (int i = 0; i < nx; ++i) {
        const std::size_t p = d.at(i, j, k);
        const double* up = u + 5 * p;
        const double rho_inv = 1.0 / up[0];
        rho_i[p] = rho_inv;
        us[p] = up[1] * rho_inv;
        vs[p] = up[2] * rho_inv;
        ws[p] = up[3] * rho_inv;
        square[p] = 0.5 * (up[1] * up[1] + up[2] * up[2] + up[3] * up[3]) * rho_inv;
        qs[p] = square[p] * rho_inv;
        if (speed) speed[p] = std::sqrt(c.c1c2 * rho_inv * (up[4] - square[p]));
      }
    }
  }
  // Each row of rhs is built in one go while it sits in L1: the forcing plus the x fluxes, then the
  // x dissipation, the y and z fluxes and dissipation, then the scaling by dt. These are the
  // reference's whole-field passes in the same order at every point (so the same bits), with one
  // pass over memory and no barrier between directions. Boundary rows and points keep the forcing.
#pragma omp for collapse(2) schedule(static)
  for (int k = 0; k < nz; ++k) {
    for (int j = 0; j < ny; ++j) {
      const std::size_t row = 5 * d.at(0, j, k);
      if (k == 0 || k == nz - 1 || j == 0 || j == ny - 1) {
        std::copy(forcing + row, forcing + row + 5 * nx, rhs + row);
        continue;
      }
      std::copy(forcing + row, forcing + row + 5, rhs + row);
      std::copy(forcing + row + 5 * (nx - 1), forcing + row + 5 * nx, rhs + row + 5 * (nx - 1));
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p = d.at(i, j, k);
        const double* U = u + 5 * p;
        const double* F = forcing + 5 * p;
        double* r = rhs + 5 * p;
        const double uijk = us[p], up1 = us[p + px], um1 = us[p - px];
        r[0] = F[0] + (c.dx1tx1 * (U[sx] - 2.0 * U[0] + U[-sx]) - c.tx2 * (U[sx + 1] - U[-sx + 1]));
        r[1] = F[1] + (c.dx2tx1 * (U[sx + 1] - 2.0 * U[1] + U[-sx + 1]) + c.xxcon2 * c.con43 * (up1 - 2.0 * uijk + um1) -
                c.tx2 * (U[sx + 1] * up1 - U[-sx + 1] * um1 + (U[sx + 4] - square[p + px] - U[-sx + 4] + square[p - px]) * c.c2));
        r[2] = F[2] + (c.dx3tx1 * (U[sx + 2] - 2.0 * U[2] + U[-sx + 2]) + c.xxcon2 * (vs[p + px] - 2.0 * vs[p] + vs[p - px]) -
                c.tx2 * (U[sx + 2] * up1 - U[-sx + 2] * um1));
        r[3] = F[3] + (c.dx4tx1 * (U[sx + 3] - 2.0 * U[3] + U[-sx + 3]) + c.xxcon2 * (ws[p + px] - 2.0 * ws[p] + ws[p - px]) -
                c.tx2 * (U[sx + 3] * up1 - U[-sx + 3] * um1));
        r[4] = F[4] + (c.dx5tx1 * (U[sx + 4] - 2.0 * U[4] + U[-sx + 4]) + c.xxcon3 * (qs[p + px] - 2.0 * qs[p] + qs[p - px]) +
                c.xxcon4 * (up1 * up1 - 2.0 * uijk * uijk + um1 * um1) +
                c.xxcon5 * (U[sx + 4] * rho_i[p + px] - 2.0 * U[4] * rho_i[p] + U[-sx + 4] * rho_i[p - px]) -
                c.tx2 * ((c.c1 * U[sx + 4] - c.c2 * square[p + px]) * up1 - (c.c1 * U[-sx + 4] - c.c2 * square[p - px]) * um1));
      }
      x_dissipation(rhs + 5 * d.at(0, j, k), u + 5 * d.at(0, j, k), nx, c.dssp);
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p = d.at(i, j, k);
        const double* U = u + 5 * p;
        double* r = rhs + 5 * p;
        const double vijk = vs[p], vp1 = vs[p + py], vm1 = vs[p - py];
        r[0] += c.dy1ty1 * (U[sy] - 2.0 * U[0] + U[-sy]) - c.ty2 * (U[sy + 2] - U[-sy + 2]);
        r[1] += c.dy2ty1 * (U[sy + 1] - 2.0 * U[1] + U[-sy + 1]) + c.yycon2 * (us[p + py] - 2.0 * us[p] + us[p - py]) -
                c.ty2 * (U[sy + 1] * vp1 - U[-sy + 1] * vm1);
        r[2] += c.dy3ty1 * (U[sy + 2] - 2.0 * U[2] + U[-sy + 2]) + c.yycon2 * c.con43 * (vp1 - 2.0 * vijk + vm1) -
                c.ty2 * (U[sy + 2] * vp1 - U[-sy + 2] * vm1 + (U[sy + 4] - square[p + py] - U[-sy + 4] + square[p - py]) * c.c2);
        r[3] += c.dy4ty1 * (U[sy + 3] - 2.0 * U[3] + U[-sy + 3]) + c.yycon2 * (ws[p + py] - 2.0 * ws[p] + ws[p - py]) -
                c.ty2 * (U[sy + 3] * vp1 - U[-sy + 3] * vm1);
        r[4] += c.dy5ty1 * (U[sy + 4] - 2.0 * U[4] + U[-sy + 4]) + c.yycon3 * (qs[p + py] - 2.0 * qs[p] + qs[p - py]) +
                c.yycon4 * (vp1 * vp1 - 2.0 * vijk * vijk + vm1 * vm1) +
                c.yycon5 * (U[sy + 4] * rho_i[p + py] - 2.0 * U[4] * rho_i[p] + U[-sy + 4] * rho_i[p - py]) -
                c.ty2 * ((c.c1 * U[sy + 4] - c.c2 * square[p + py]) * vp1 - (c.c1 * U[-sy + 4] - c.c2 * square[p - py]) * vm1);
      }
      row_dissipation(rhs + 5 * d.at(0, j, k), u + 5 * d.at(0, j, k), sy, j, ny, nx, c.dssp);
      for (int i = 1; i < nx - 1; ++i) {
        const std::size_t p = d.at(i, j, k);
        const double* U = u + 5 * p;
        double* r = rhs + 5 * p;
        const double wijk = ws[p], wp1 = ws[p + pz], wm1 = ws[p - pz];
        r[0] += c.dz1tz1 * (U[sz] - 2.0 * U[0] + U[-sz]) - c.tz2 * (U[sz + 3] - U[-sz + 3]);
        r[1] += c.dz2tz1 * (U[sz + 1] - 2.0 * U[1] + U[-sz + 1]) + c.zzcon2 * (us[p + pz] - 2.0 * us[p] + us[p - pz]) -
                c.tz2 * (U[sz + 1] * wp1 - U[-sz + 1] * wm1);
        r[2] += c.dz3tz1 * (U[sz + 2] - 2.0 * U[2] + U[-sz + 2]) + c.zzcon2 * (vs[p + pz] - 2.0 * vs[p] + vs[p - pz]) -
                c.tz2 * (U[sz + 2] * wp1 - U[-sz + 2] * wm1);
        r[3] += c.dz4tz1 * (U[sz + 3] - 2.0 * U[3] + U[-sz + 3]) + c.zzcon2 * c.con43 * (wp1 - 2.0 * wijk + wm1) -
                c.tz2 * (U[sz + 3] * wp1 - U[-sz + 3] * wm1 + (U[sz + 4] - square[p + pz] - U[-sz + 4] + square[p - pz]) * c.c2);
        r[4] += c.dz5tz1 * (U[sz + 4] - 2.0 * U[4] + U[-sz + 4]) + c.zzcon3 * (qs[p + pz] - 2.0 * qs[p] + qs[p - pz]) +
                c.zzcon4 * (wp1 * wp1 - 2.0 * wijk * wijk + wm1 * wm1) +
                c.zzcon5 * (U[sz + 4] * rho_i[p + pz] - 2.0 * U[4] * rho_i[p] + U[-sz + 4] * rho_i[p - pz]) -
                c.tz2 * ((c.c1 * U[sz + 4] - c.c2 * square[p + pz]) * wp1 - (c.c1 * U[-sz + 4] - c.c2 * square[p - pz]) * wm1);
      }
      row_dissipation(rhs + 5 * d.at(0, j, k), u + 5 * d.at(0, j, k), sz, k, nz, nx, c.dssp);
      double* r = rhs + row + 5;
      for (int i = 0; i < 5 * (nx - 2); ++i) r[i] *= c.dt;
    }
  }
}

void add(CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  double* u = f.u.data();
  const double* rhs = f.rhs.data();
#pragma omp for collapse(2) schedule(static)
  for (int k = 1; k < d.nz - 1; ++k) {
    for (int j = 1; j < d.ny - 1; ++j) {
      const std::size_t p = 5 * d.at(1, j, k);
      for (int i = 0; i < 5 * (d.nx - 2); ++i) u[p + i] += rhs[p + i];
    }
  }
}

std::array<double, 5> error_norm(const CfdConstants& c, const CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  std::array<double, 5> rms{};
  for (int k = 0; k < d.nz; ++k) {
    for (int j = 0; j < d.ny; ++j) {
      for (int i = 0; i < d.nx; ++i) {
        double ex[5];
        c.exact_solution(i * c.dnxm1, j * c.dnym1, k * c.dnzm1, ex);
        const double* p = f.u.data() + 5 * d.at(i, j, k);
        for (int m = 0; m < 5; ++m) {
          const double e = p[m] - ex[m];
          rms[m] += e * e;
        }
      }
    }
  }
  for (auto& r : rms) r = std::sqrt(r / (double(d.nz - 2) * double(d.ny - 2) * double(d.nx - 2)));
  return rms;
}

std::array<double, 5> rhs_norm(const CfdZoneFields& f) {
  const ZoneDims& d = f.d;
  std::array<double, 5> rms{};
  for (int k = 1; k < d.nz - 1; ++k) {
    for (int j = 1; j < d.ny - 1; ++j) {
      for (int i = 1; i < d.nx - 1; ++i) {
        const double* p = f.rhs.data() + 5 * d.at(i, j, k);
        for (int m = 0; m < 5; ++m) rms[m] += p[m] * p[m];
      }
    }
  }
  for (auto& r : rms) r = std::sqrt(r / (double(d.nz - 2) * double(d.ny - 2) * double(d.nx - 2)));
  return rms;
}

CfdZone::CfdZone(const CfdConstants& c, const ZoneDims& dims, bool with_speed, const char* benchmark,
                 const ZonePlacement& placement, int zone)
    : c_(c), f_(dims, with_speed, placement, zone) {
  if (dims.nx < 6 || dims.ny < 6 || dims.nz < 6) {
    throw InvalidArgument(std::string(benchmark) + " zone " + std::to_string(dims.nx) + "x" +
                          std::to_string(dims.ny) + "x" + std::to_string(dims.nz) +
                          " is below 6 points in some direction");
  }
}

void CfdZone::initialize() {
  if (!forcing_ready_) {
    exact_rhs(c_, f_);
    forcing_ready_ = true;
  }
  initialize_field(c_, f_);
}

ZoneNorms CfdZone::norms() {
  ZoneNorms n;
  n.error = error_norm(c_, f_);
  compute_rhs(c_, f_);
  n.residual = rhs_norm(f_);
  for (auto& r : n.residual) r /= c_.dt;
  return n;
}

void CfdZone::perturb(double delta) {
  const ZoneDims& d = f_.d;
  f_.u[5 * d.at(d.nx / 2, d.ny / 2, d.nz / 2) + 4] += delta;
}

}  // namespace hympi::npb
