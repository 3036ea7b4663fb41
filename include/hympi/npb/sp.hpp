#pragma once
// SP-MZ zone solver: Beam-Warming ADI with scalar pentadiagonal systems after diagonalisation.
#include "hympi/npb/cfd.hpp"

namespace hympi::npb {

/// One SP-MZ zone. Throws InvalidArgument when a zone dimension is below 6 points.
class SpZone final : public CfdZone {
 public:
  /// `c` must outlive the zone.
  SpZone(const CfdConstants& c, const ZoneDims& dims);
  void step() override;
};

}  // namespace hympi::npb
