#pragma once
// SP-MZ zone solver: Beam-Warming ADI with scalar pentadiagonal systems after diagonalisation.
#include "hympi/npb/cfd.hpp"

namespace hympi::npb {

/// One SP-MZ zone. Throws InvalidArgument when a zone dimension is below 6 points.
class SpZone final : public CfdZone {
 public:
  /// `c` and `placement` must outlive the zone; `zone` numbers its arrays for the random layout.
  SpZone(const CfdConstants& c, const ZoneDims& dims, const ZonePlacement& placement = ZonePlacement::plain(),
         int zone = 0);
  void step() override;
};

}  // namespace hympi::npb
