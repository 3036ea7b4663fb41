#pragma once
// BT-MZ zone solver: Beam-Warming ADI with 5x5 block-tridiagonal systems along x, y and z.
#include "hympi/npb/cfd.hpp"
#include "hympi/npb/zone_solver.hpp"

namespace hympi::npb {

/// One BT-MZ zone. Throws InvalidArgument when a zone dimension is below 6 points.
class BtZone final : public ZoneSolver {
 public:
  /// `c` must outlive the zone.
  BtZone(const CfdConstants& c, const ZoneDims& dims);
  void initialize() override;
  void step() override;
  [[nodiscard]] double* field() override { return f_.u.data(); }
  [[nodiscard]] ZoneNorms norms() override;
  void perturb(double delta) override;

 private:
  const CfdConstants& c_;
  CfdZoneFields f_;
  bool forcing_ready_ = false;
};

}  // namespace hympi::npb
