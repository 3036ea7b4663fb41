#pragma once
// Checkpoints, restart and snapshots of the NPB-MZ apps through hympi::h5: one dataset per zone,
// written and read collectively (every rank takes part in every zone, owners with data).
#include "hympi/h5/checkpoint.hpp"
#include "hympi/npb/mz_run.hpp"
#include "hympi/npb/zone_grid.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace hympi::npb {

/// The group of zone `id` in checkpoints and snapshots: "zone_007" (its solution is "zone_007/u").
[[nodiscard]] std::string zone_group(int id);

/// The problem size a checkpoint records and a restart demands equal: benchmark, class, time step,
/// mesh, zone grid and the zone widths and heights (a checkpoint of another class or benchmark is refused).
[[nodiscard]] nlohmann::json mz_problem_size(const std::string& benchmark, const ClassParams& p,
                                             const ZoneGrid& grid);

/// Throws h5::BadFile naming `path` when checkpoint `header` holds a time step outside 0 .. `niter`: the hooks'
/// restart and the app's check before launch both call it.
void check_mz_checkpoint(const std::string& path, const h5::CheckpointHeader& header, int niter);

/// The driver hooks that restart from `io`'s checkpoint (resume), write checkpoints and snapshots
/// when due (after_step). Each zone's u is dataset "zone_NNN/u", (z, y, x, 5) of the zone's
/// nz x ny x nx points (the x padding left out); snapshots hold its density and energy per unit
/// volume in single precision on grid "zone_NNN", placed in the periodic unit square of the zone
/// grid. The references must outlive the run. The hooks throw h5::BadFile (naming the file) for a
/// checkpoint beyond the run's `niter` steps or with zones the run does not have, and what IoSession
/// throws otherwise.
[[nodiscard]] MzHooks mz_io_hooks(h5::IoSession& io, const ZoneGrid& grid, const ZonePartition& partition, int rank,
                                  int niter, double dt);

}  // namespace hympi::npb
