// hympi-pencil's checkpoints, restart and snapshots (set-up and bookkeeping; the I/O is hympi::h5's).
#include "hympi/pencil/io.hpp"

#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include "hympi/core/error.hpp"

namespace hympi::pencil {

namespace {

/// The grid's (nx, ny, d) as hympi's (x, y, z) = (d, ny, nx).
std::array<long, 3> spectral_global(const IoGrid& grid) {
  const ZModes modes = dealiased_modes(grid.options.grid[2], PencilOptions::kMinNz);
  return {modes.doubles(), grid.options.grid[1], grid.options.grid[0]};
}

}  // namespace

std::string state_dataset(const IoGrid& grid) { return grid.name.empty() ? "u" : grid.name + "/u"; }

h5::Block3 state_block(const IoGrid& grid, const PencilSolver& solver) {
  h5::Block3 b;
  b.global = spectral_global(grid);
  b.memory = h5::MemoryLayout3::dense({0, 0, 0});
  if (!grid.mine) return b;  // an empty box: the rank takes part in the collective call without data
  if (solver.options().grid != grid.options.grid)
    throw InvalidArgument("grid '" + grid.name + "' is not this rank's solver's");
  const transpose::Extent xs = solver.planes_x();
  b.box = {{0, 0, xs.begin}, {b.global[0], b.global[1], xs.end}};
  b.memory = h5::MemoryLayout3::dense(b.box.size());
  return b;
}

void write_checkpoint(h5::IoSession& io, std::span<const IoGrid> grids, const PencilSolver& solver) {
  const nlohmann::json state{{"t", solver.time()}, {"dt_bound", solver.dt_bound()}, {"steps", solver.steps_done()}};
  io.checkpoint(solver.steps_done(), solver.time(), state, [&](h5::File& f) {
    for (const IoGrid& g : grids)
      f.write(state_dataset(g), state_block(g, solver), g.mine ? solver.state() : std::span<const double>());
  });
}

void write_snapshot(h5::IoSession& io, std::span<const IoGrid> grids, const PencilSolver& solver) {
  std::vector<double> mine;  // one grid per rank: filled once, before any field points at it
  std::vector<h5::SnapshotField> fields;
  for (const IoGrid& g : grids) {
    const PencilOptions& o = g.options;
    h5::SnapshotField field;
    field.grid = g.name;
    field.name = "u";
    field.block.global = o.grid;
    field.block.memory = h5::MemoryLayout3::dense({0, 0, 0});
    if (g.mine) {
      const transpose::Extent xs = solver.planes_x();
      field.block.box = {{xs.begin, 0, 0}, {xs.end, o.grid[1], o.grid[2]}};
      field.block.memory = h5::MemoryLayout3::dense(field.block.box.size());
      mine.resize(static_cast<std::size_t>(field.block.box.count()));
      solver.physical(mine);
      field.data = mine;
    }
    field.origin = {o.x0, 0.0, 0.0};
    field.spacing = {o.lx / static_cast<double>(o.grid[0] - 1), o.problem.ly / static_cast<double>(o.grid[1] - 1),
                     2 * std::numbers::pi / static_cast<double>(o.grid[2])};
    fields.push_back(field);
  }
  io.snapshot(solver.steps_done(), solver.time(), fields);
}

CheckpointState checkpoint_state(const std::string& path, const h5::CheckpointHeader& h, long max_steps) {
  const auto bad = [&](const std::string& why) { return h5::BadFile("checkpoint " + path + " " + why); };
  CheckpointState s;
  try {
    s.steps = h.state.at("steps").get<long>();
    s.t = h.state.at("t").get<double>();
    s.dt_bound = h.state.at("dt_bound").get<double>();
  } catch (const nlohmann::json::exception&) {
    throw bad("has no solver state (numbers t, dt_bound, steps)");
  }
  if (s.steps > max_steps)
    throw bad("holds step " + std::to_string(s.steps) + ", past the " + std::to_string(max_steps) + " steps asked for");
  if (!(s.dt_bound > 0) || !std::isfinite(s.dt_bound) || !std::isfinite(s.t) || s.steps < 1)
    throw bad("has a state no step leaves (t, dt_bound, steps)");
  return s;
}

void restart_pencil(h5::IoSession& io, std::span<const IoGrid> grids, PencilSolver& solver, long max_steps) {
  std::vector<double> u(solver.state().size());
  CheckpointState s;
  io.restart([&](h5::File& f, const h5::CheckpointHeader& h) {
    s = checkpoint_state(f.path(), h, max_steps);
    for (const IoGrid& g : grids)
      f.read(state_dataset(g), state_block(g, solver), g.mine ? std::span<double>(u) : std::span<double>());
  });
  solver.resume(u, s.t, s.dt_bound, s.steps);
}

StepHook io_hook(h5::IoSession* io, std::span<const IoGrid> grids) {
  if (io == nullptr) return {};
  return [io, grids = std::vector<IoGrid>(grids.begin(), grids.end())](const PencilSolver& solver) {
    const long step = solver.steps_done();
    io->progress();  // publishes the checkpoint in flight once every rank has written it
    if (io->snapshot_due(step)) write_snapshot(*io, grids, solver);
    if (io->checkpoint_due(step)) write_checkpoint(*io, grids, solver);
  };
}

}  // namespace hympi::pencil
