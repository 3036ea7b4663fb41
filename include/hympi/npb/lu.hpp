#pragma once
// LU-MZ zone solver: symmetric successive over-relaxation (SSOR) of the implicit Navier-Stokes
// system, with a lower and an upper block-triangular sweep per iteration.
#include "hympi/core/memory.hpp"
#include "hympi/npb/cfd.hpp"
#include "hympi/npb/data_layout.hpp"
#include "hympi/npb/zone_solver.hpp"

#include <vector>

namespace hympi::npb {

/// Constants of LU's setcoeff (mesh spacing of an average zone) plus dt and omega.
struct LuConstants {
  CfdConstants cfd;  ///< for the exact-solution coefficients only
  double dxi, deta, dzeta;
  double tx1, tx2, tx3, ty1, ty2, ty3, tz1, tz2, tz3;
  double dx[5], dy[5], dz[5];
  double dssp, dt, omega;
  double c1, c2, c3, c4, c5;
  /// Constants for the global mesh `g`, time step `dt` and relaxation factor `omega`.
  [[nodiscard]] static LuConstants make(const ZoneGeometry& g, double dt, double omega);
};

/// One LU-MZ zone. Throws InvalidArgument when a zone dimension is below 6 points.
class LuZone final : public ZoneSolver {
 public:
  /// `c` and `placement` must outlive the zone. LU-MZ keeps its own arrays (first touch by the
  /// constructing thread): `placement` only gives the topology field_placement() asks.
  LuZone(const LuConstants& c, const ZoneDims& dims, const ZonePlacement& placement = ZonePlacement::plain());
  void initialize() override;
  void step() override;
  [[nodiscard]] double* field() override { return u_.get(); }
  /// Recomputes the residual and the derived scalars from u, as the end of the previous SSOR sweep left them.
  void restored() override;
  void finish_timed() override;
  [[nodiscard]] ZoneNorms norms() override;
  void perturb(double delta) override;
  /// Where u's pages are (no intent). Throws TopologyError without a topology of this machine.
  [[nodiscard]] locality::PagePlacement field_placement() const override;

 private:
  /// Zeros the zone-sized arrays, the team's threads each its share of the (k, j) rows (placement.run).
  void touch_by_team(const ZonePlacement& placement);
  void set_boundary();
  void set_interior();
  void compute_forcing();
  void compute_rhs();
  void compute_rhs_body();  // orphaned worksharing loops; call inside a parallel region
  void ssor();
  [[nodiscard]] double surface_integral() const;

  const LuConstants& c_;
  const Topology* topology_ = nullptr;
  ZoneDims d_;
  // u and the residual interleaved, five doubles a point (as the sweeps and the exchange read them); the
  // forcing and a copy of u in components, for the residual's vector lanes (lu.cpp); 1/rho and q. Allocated
  // untouched: the constructor's first write, by the team's rows, places their pages (first touch).
  UntouchedArray<double> u_, rsd_, frct_, qs_, rho_i_, u_components_;
  std::vector<double> x_weights_;  // the x dissipation's five weights at each point of a row
  // One k-plane of blocks, grouped by the lanes that make them (lane_slot in lu.cpp): the x and y
  // neighbour blocks without their structural zeros and the lower-triangular diagonal (the z
  // block is used by its row only, where it is built).
  std::vector<double> x_blk_, y_blk_, d_blk_;
  std::vector<double> tv_;                     // [ny][nxmax][5]
  std::array<double, 5> rsdnm_{};
  bool forcing_ready_ = false;
};

}  // namespace hympi::npb
