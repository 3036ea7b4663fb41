#pragma once
// What the multi-zone driver needs from a benchmark's per-zone solver.
#include <array>

#include "hympi/locality/membind.hpp"

namespace hympi::npb {

/// Per-zone contributions to the verification quantities.
struct ZoneNorms {
  std::array<double, 5> residual{};  ///< BT/SP: rhs RMS / dt; LU: l2 norm of the residual
  std::array<double, 5> error{};     ///< RMS of u - exact solution
  double surface = 0.0;              ///< LU: surface integral; 0 for BT/SP
};

/// One zone of BT-MZ, SP-MZ or LU-MZ.
class ZoneSolver {
 public:
  virtual ~ZoneSolver() = default;
  /// Sets the initial field (and, the first time, the forcing term).
  virtual void initialize() = 0;
  /// One time step (BT/SP: ADI; LU: one SSOR sweep). Spawns its own OpenMP team.
  virtual void step() = 0;
  /// The solution field [nz][ny][nxmax][5] whose boundary planes the exchange fills.
  [[nodiscard]] virtual double* field() = 0;
  /// The field was replaced by a checkpoint's (restart): recomputes whatever a step expects to find
  /// already computed from it, so the next step is the one an uninterrupted run takes (LU: the residual).
  virtual void restored() {}
  /// Quantities that belong to the timed part (LU's residual norm); called after the last step.
  virtual void finish_timed() {}
  /// The zone's verification contributions; may recompute the right-hand side.
  [[nodiscard]] virtual ZoneNorms norms() = 0;
  /// Adds `delta` to one interior value of u, so tests can prove verification catches errors.
  virtual void perturb(double delta) = 0;
  /// Where the kernel put the pages of the solution field (with the intent of the data layout, if
  /// it has one). Throws TopologyError when the zone cannot ask (no topology, not this machine).
  [[nodiscard]] virtual locality::PagePlacement field_placement() const = 0;
};

}  // namespace hympi::npb
