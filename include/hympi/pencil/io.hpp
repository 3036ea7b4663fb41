#pragma once
// hympi-pencil's checkpoints, restart and snapshots (issue 17) through hympi::h5: every grid of a run (one
// standalone, coarse and fine when coupled) in one file, each rank writing and reading only its own planes.
#include <span>
#include <string>

#include "hympi/h5/checkpoint.hpp"
#include "hympi/pencil/run.hpp"
#include "hympi/pencil/solver.hpp"

namespace hympi::pencil {

/// One grid of a run as every rank sees it: all ranks list all of the run's grids in the same order (the h5
/// calls are collective over the world), `mine` on the ranks whose solver steps it.
struct IoGrid {
  std::string name;       ///< "" for a standalone run (dataset "u"); "coarse", "fine" when coupled ("fine/u")
  PencilOptions options;  ///< the grid's problem (its size, x0, lengths: the same on every rank)
  bool mine = false;      ///< this rank's solver steps this grid
};

/// The checkpoint dataset of a grid's state: "u", or "<name>/u".
[[nodiscard]] std::string state_dataset(const IoGrid& grid);

/// A grid's spectral state as a 3D block: the planes' local index zd + d (y + ny x) read as hympi's (x, y, z) =
/// (zd, y, x), so the dataset is (nx, ny, d) with d = 2 x kept modes; this rank's x planes, or nothing when the
/// grid is not `mine`. Throws InvalidArgument when `solver` is not the grid's.
[[nodiscard]] h5::Block3 state_block(const IoGrid& grid, const PencilSolver& solver);

/// Writes the checkpoint after `solver`'s last step: each grid's state (doubles, bitwise) and, in the header's
/// state, the time, the agreed time-step bound and the steps (the same on every rank: they share each time
/// step). Collective over the world; throws h5::IoError (the previous checkpoint stays).
void write_checkpoint(h5::IoSession& io, std::span<const IoGrid> grids, const PencilSolver& solver);

/// Writes a snapshot of each grid's u in physical space (single precision, dataset "u" on mesh `name`, origin
/// (x0, 0, 0), spacing (hx, hy, 2 pi / nz)). Collective over the world; throws h5::IoError.
void write_snapshot(h5::IoSession& io, std::span<const IoGrid> grids, const PencilSolver& solver);

/// The time stepper's scalars of checkpoint `path`'s header (t, dt_bound, steps); throws h5::BadFile naming `path`
/// when they are missing, no step leaves them (steps < 1, t or dt_bound not finite, dt_bound <= 0) or steps exceed
/// `max_steps`. restart_pencil and the app's check before launch both use it.
struct CheckpointState {
  double t = 0, dt_bound = 0;
  long steps = 0;
};
CheckpointState checkpoint_state(const std::string& path, const h5::CheckpointHeader& header, long max_steps);

/// Restores `solver` (this rank's grid) from io's restart file, as PencilSolver::resume; any layout reads any
/// other's checkpoint. Collective over the world; throws h5::BadFile naming the file when it is not this run's
/// (io checks app and problem), lacks a grid's state, or holds more steps than `max_steps`; h5::IoError.
void restart_pencil(h5::IoSession& io, std::span<const IoGrid> grids, PencilSolver& solver, long max_steps);

/// The StepHook that writes checkpoints and snapshots at io's cadence (none without io).
[[nodiscard]] StepHook io_hook(h5::IoSession* io, std::span<const IoGrid> grids);

}  // namespace hympi::pencil
