#pragma once
// Pieces BT-MZ and SP-MZ share: the constants of set_constants, the exact solution, the initial
// field, the forcing term, the explicit right-hand side and the two verification norms.
// Zone fields are [nz][ny][nxmax][5] (5-component) or [nz][ny][nxmax] (scalar), nxmax odd.
#include "hympi/npb/data_layout.hpp"
#include "hympi/npb/zone_solver.hpp"
#include "hympi/npb/zone_grid.hpp"

#include <array>
#include <cstddef>
#include <vector>

namespace hympi::npb {

/// Extents of one zone and the strides of its fields.
struct ZoneDims {
  int nx = 0;
  int ny = 0;
  int nz = 0;
  int nxmax = 0;
  /// Dims of a zone of the grid (pitch padded_nx(nx)).
  [[nodiscard]] static ZoneDims of(const Zone& z) noexcept { return {z.nx, z.ny, z.nz, padded_nx(z.nx)}; }
  /// Points of a scalar field, padding included.
  [[nodiscard]] std::size_t size1() const noexcept { return std::size_t(nxmax) * ny * nz; }
  /// Doubles of a 5-component field.
  [[nodiscard]] std::size_t size5() const noexcept { return 5 * size1(); }
  /// Offset of point (i, j, k) in a scalar field.
  [[nodiscard]] std::size_t at(int i, int j, int k) const noexcept {
    return (std::size_t(k) * ny + j) * nxmax + i;
  }
};

/// The constants of the reference set_constants for one class (mesh spacing from the global mesh).
struct CfdConstants {
  std::array<std::array<double, 13>, 5> ce{};
  double c1, c2, c3, c4, c5, bt;
  double dnxm1, dnym1, dnzm1;
  double c1c2, c1c5, c3c4, c1345, conz1;
  double tx1, tx2, tx3, ty1, ty2, ty3, tz1, tz2, tz3;
  double dx1, dx2, dx3, dx4, dx5, dy1, dy2, dy3, dy4, dy5, dz1, dz2, dz3, dz4, dz5;
  double dxmax, dymax, dzmax, dssp, c4dssp, c5dssp;
  double dt, dttx1, dttx2, dtty1, dtty2, dttz1, dttz2, c2dttx1, c2dtty1, c2dttz1;
  double dtdssp, comz1, comz4, comz5, comz6;
  double c3c4tx3, c3c4ty3, c3c4tz3;
  double dx1tx1, dx2tx1, dx3tx1, dx4tx1, dx5tx1;
  double dy1ty1, dy2ty1, dy3ty1, dy4ty1, dy5ty1;
  double dz1tz1, dz2tz1, dz3tz1, dz4tz1, dz5tz1;
  double c2iv, con43, con16;
  double xxcon1, xxcon2, xxcon3, xxcon4, xxcon5;
  double yycon1, yycon2, yycon3, yycon4, yycon5;
  double zzcon1, zzcon2, zzcon3, zzcon4, zzcon5;

  /// Computes every constant from the global mesh and the time step.
  [[nodiscard]] static CfdConstants make(const ZoneGeometry& g, double dt);
  /// The exact solution at (xi, eta, zeta).
  void exact_solution(double xi, double eta, double zeta, double out[5]) const noexcept;
};

/// Work arrays of a BT/SP zone: the solution, right-hand side, forcing and derived scalars. Each is
/// nz x ny rows of nxmax points (x 5 components), made and placed by a ZonePlacement (--data-layout).
struct CfdZoneFields {
  ZoneDims d;
  ZoneArray u, rhs, forcing;
  ZoneArray us, vs, ws, qs, rho_i, square, speed;
  /// Allocates all arrays of `d` (zeros) as `placement` lays them out, numbered by `zone` for its
  /// random draw; `with_speed` adds the sound speed SP-MZ needs.
  CfdZoneFields(const ZoneDims& d, bool with_speed, const ZonePlacement& placement, int zone);
};

/// Transfinite interpolation of the boundary values; exact solution on the faces.
void initialize_field(const CfdConstants& c, CfdZoneFields& f);
/// Forcing term that makes the exact solution a steady state of the discrete equations.
void exact_rhs(const CfdConstants& c, CfdZoneFields& f);
/// rhs = dt * (forcing + explicit fluxes + dissipation); also the derived scalars (and speed).
/// Call inside an OpenMP parallel region or outside one (worksharing loops are orphaned).
void compute_rhs(const CfdConstants& c, CfdZoneFields& f);
/// u += rhs on interior points.
void add(CfdZoneFields& f);
/// Per-component RMS of u - exact over all points, normalised by the interior count.
std::array<double, 5> error_norm(const CfdConstants& c, const CfdZoneFields& f);
/// Per-component RMS of rhs over interior points.
std::array<double, 5> rhs_norm(const CfdZoneFields& f);

/// What a BT-MZ and an SP-MZ zone share: fields, initialisation, norms and perturbation; the
/// subclass supplies the ADI step. Throws InvalidArgument when a dimension is below 6 points.
class CfdZone : public ZoneSolver {
 public:
  void initialize() override;
  [[nodiscard]] double* field() override { return f_.u.data(); }
  [[nodiscard]] ZoneNorms norms() override;
  void perturb(double delta) override;
  /// Where u's pages are, with the layout's intent (ZoneArray::placement).
  [[nodiscard]] locality::PagePlacement field_placement() const override { return f_.u.placement(); }

 protected:
  /// `c` must outlive the zone, `placement` its arrays; `benchmark` names it in errors ("BT-MZ");
  /// `zone` numbers its arrays for the random layout.
  CfdZone(const CfdConstants& c, const ZoneDims& dims, bool with_speed, const char* benchmark,
          const ZonePlacement& placement, int zone);
  const CfdConstants& c_;
  CfdZoneFields f_;

 private:
  bool forcing_ready_ = false;
};

}  // namespace hympi::npb
