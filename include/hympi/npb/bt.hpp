#pragma once
// BT-MZ zone solver: Beam-Warming ADI with 5x5 block-tridiagonal systems along x, y and z.
#include "hympi/npb/cfd.hpp"

namespace hympi::npb {

/// One BT-MZ zone. Throws InvalidArgument when a zone dimension is below 6 points.
class BtZone final : public CfdZone {
 public:
  /// `c` and `placement` must outlive the zone; `zone` numbers its arrays for the random layout.
  BtZone(const CfdConstants& c, const ZoneDims& dims, const ZonePlacement& placement = ZonePlacement::plain(),
         int zone = 0);
  void step() override;
};

}  // namespace hympi::npb
