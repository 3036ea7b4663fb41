#include "mz_io.hpp"

#include "hympi/npb/cfd.hpp"

#include <array>
#include <cstdio>
#include <span>
#include <vector>

namespace hympi::npb {

namespace {

// Values per point of a zone field: rho, rho u, rho v, rho w, rho E.
constexpr int kComponents = 5;

// Zone `z`'s block for the rank that owns it (`owned`) or for one that only takes part.
h5::Block3 zone_block(const Zone& z, bool owned, int components, long offset, long point_stride) {
  const ZoneDims d = ZoneDims::of(z);
  h5::Block3 b;
  b.global = {d.nx, d.ny, d.nz};
  if (!owned) {
    // An empty box and no memory: the rank joins the collective call without data.
    b.memory = h5::MemoryLayout3::dense({0, 0, 0}, components);
    return b;
  }
  b.box = Box3{{0, 0, 0}, {d.nx, d.ny, d.nz}};
  // The field's rows are nxmax points long; the x padding is not part of the dataset.
  b.memory = h5::MemoryLayout3{{d.nx, d.ny, d.nz},
                               long(d.nxmax) * kComponents,
                               long(d.nxmax) * d.ny * kComponents,
                               offset,
                               components,
                               point_stride};
  return b;
}

}  // namespace

std::string zone_group(int id) {
  char name[32];
  std::snprintf(name, sizeof name, "zone_%03d", id);
  return name;
}

nlohmann::json mz_problem_size(const std::string& benchmark, const ClassParams& p, const ZoneGrid& grid) {
  // Zone widths per column and heights per row give every zone's size (nz is the mesh's) and stay
  // short enough for a one-line error even for class F's 64 x 64 zones.
  const ZoneGeometry& g = grid.geometry();
  return {{"benchmark", benchmark},
          {"class", p.problem_class},
          {"dt", p.dt},
          {"mesh", {g.gx_size, g.gy_size, g.gz_size}},
          {"zone_grid", {g.x_zones, g.y_zones}},
          {"zone_x_sizes", grid.x_sizes()},
          {"zone_y_sizes", grid.y_sizes()}};
}

void check_mz_checkpoint(const std::string& path, const h5::CheckpointHeader& h, int niter) {
  if (h.step < 0 || h.step > niter)
    throw h5::BadFile(path + ": checkpoint at time step " + std::to_string(h.step) + ", beyond the " +
                      std::to_string(niter) + " time steps of this run");
}

MzHooks mz_io_hooks(h5::IoSession& io, const ZoneGrid& grid, const ZonePartition& partition, int rank, int niter,
                    double dt) {
  // Zone id -> index into the rank's field list (-1: another rank's zone).
  std::vector<int> local(static_cast<std::size_t>(grid.num_zones()), -1);
  const std::vector<int>& mine = partition.zones_of(rank);
  for (std::size_t i = 0; i < mine.size(); ++i) local[static_cast<std::size_t>(mine[i])] = static_cast<int>(i);

  MzHooks hooks;
  hooks.resume = [&io, &grid, local, niter](std::span<double* const> fields) -> int {
    if (!io.restarting()) return 0;
    long done = 0;
    io.restart([&](h5::File& f, const h5::CheckpointHeader& h) {
      // The header is the same on every rank, so every rank throws alike (no rank left in a collective).
      check_mz_checkpoint(f.path(), h, niter);
      for (const Zone& z : grid.zones()) {
        const int l = local[static_cast<std::size_t>(z.id)];
        const h5::Block3 block = zone_block(z, l >= 0, kComponents, 0, 0);
        const std::span<double> data =
            l >= 0 ? std::span<double>(fields[static_cast<std::size_t>(l)], ZoneDims::of(z).size5())
                   : std::span<double>();
        f.read(zone_group(z.id) + "/u", block, data);
      }
      done = h.step;
    });
    return static_cast<int>(done);
  };

  hooks.after_step = [&io, &grid, local, dt](int step, std::span<double* const> fields) {
    auto field_of = [&](const Zone& z) -> std::span<const double> {
      const int l = local[static_cast<std::size_t>(z.id)];
      if (l < 0) return {};
      return {fields[static_cast<std::size_t>(l)], ZoneDims::of(z).size5()};
    };
    const double time = step * dt;
    io.progress();  // publishes the checkpoint in flight once every rank has written it
    if (io.checkpoint_due(step)) {
      // u (boundary planes included) is all the state a step carries into the next: BT/SP derive
      // the right-hand side from it at the start of a step, LU recomputes its residual (restored()).
      io.checkpoint(step, time, nlohmann::json::object(), [&](h5::File& f) {
        for (const Zone& z : grid.zones()) {
          f.write(zone_group(z.id) + "/u", zone_block(z, local[static_cast<std::size_t>(z.id)] >= 0, kComponents, 0, 0),
                  field_of(z));
        }
      });
    }
    if (io.snapshot_due(step)) {
      // The zones tile the periodic unit square of the zone grid: neighbours share two planes (each
      // one's boundary is the other's first interior plane), so a zone's first interior point sits where
      // the interiors of the zones before it end, and its boundary point one spacing before.
      const ZoneGeometry& g = grid.geometry();
      long unique_x = 0, unique_y = 0;
      for (int w : grid.x_sizes()) unique_x += w - 2;
      for (int h : grid.y_sizes()) unique_y += h - 2;
      const double hx = 1.0 / double(unique_x), hy = 1.0 / double(unique_y), hz = 1.0 / double(g.gz_size - 1);
      std::vector<h5::SnapshotField> out;
      for (const Zone& z : grid.zones()) {
        long x0 = 0, y0 = 0;
        for (int c = 0; c < z.ix; ++c) x0 += grid.x_sizes()[static_cast<std::size_t>(c)] - 2;
        for (int r = 0; r < z.jy; ++r) y0 += grid.y_sizes()[static_cast<std::size_t>(r)] - 2;
        const bool owned = local[static_cast<std::size_t>(z.id)] >= 0;
        const std::span<const double> u = field_of(z);
        for (const auto& [name, component] : {std::pair<const char*, int>{"density", 0}, {"energy", 4}}) {
          // One component of the interleaved field: components = 1, point stride 5, offset = component.
          out.push_back({zone_group(z.id), name, zone_block(z, owned, 1, owned ? component : 0, owned ? kComponents : 0),
                         u, {double(x0 - 1) * hx, double(y0 - 1) * hy, 0.0}, {hx, hy, hz}});
        }
      }
      io.snapshot(step, time, out);
    }
  };
  return hooks;
}

}  // namespace hympi::npb
