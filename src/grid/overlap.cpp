#include "hympi/grid/overlap.hpp"

#include <string>

namespace hympi {

void OverlapOptions::validate(int threads) const {
  if (tile) {
    static constexpr const char* axis[3] = {"x", "y", "z"};
    for (int d = 0; d < 3; ++d)
      if ((*tile)[d] < 1)
        throw InvalidArgument("tile size must be >= 1 on every axis, got " + std::to_string((*tile)[d]) + " on " +
                              axis[d]);
  }
  if (strategy == OverlapStrategy::comm_thread && threads < 2)
    throw InvalidArgument("strategy commthread needs at least 2 OpenMP threads per rank (one drives MPI), got " +
                          std::to_string(threads));
}

nlohmann::json OverlapOptions::to_json() const {
  nlohmann::json j{{"strategy", to_string(strategy)}, {"tile", nullptr}};
  if (tile) j["tile"] = *tile;
  return j;
}

ExchangedSides exchanged_sides(const CartDecomposition& cart) {
  ExchangedSides sides{};
  for (int d = 0; d < 3; ++d)
    for (int s = 0; s < 2; ++s) {
      std::array<int, 3> o{0, 0, 0};
      o[d] = s == 0 ? -1 : 1;
      sides[d][s] = cart.neighbour(o) != MPI_PROC_NULL;
    }
  return sides;
}

std::vector<Box3> tile_box(const Box3& box, const std::optional<std::array<long, 3>>& tile, UntiledRows rows) {
  std::vector<Box3> items;
  if (box.empty()) return items;
  const auto n = box.size();
  // Untiled work is handed out in x-rows: fine enough for load balance, long enough to vectorise.
  const std::array<long, 3> t = tile ? *tile : std::array<long, 3>{n[0], 1, rows == UntiledRows::plane_pairs ? 2 : 1};
  for (int d = 0; d < 3; ++d)
    if (t[d] < 1) throw InvalidArgument("tile size must be >= 1, got " + std::to_string(t[d]));
  for (long z = box.low[2]; z < box.high[2]; z += t[2])
    for (long y = box.low[1]; y < box.high[1]; y += t[1])
      for (long x = box.low[0]; x < box.high[0]; x += t[0])
        items.push_back(Box3{{x, y, z},
                             {std::min(x + t[0], box.high[0]), std::min(y + t[1], box.high[1]),
                              std::min(z + t[2], box.high[2])}});
  return items;
}

std::vector<Box3> shell_boxes(const std::array<long, 3>& extent, int width, const ExchangedSides& sides,
                              Box3& interior) {
  std::vector<Box3> shell;
  Box3 rest{{0, 0, 0}, extent};
  // Peel slabs off z, then y, then x: each slab is contiguous in memory along x.
  for (int d = 2; d >= 0; --d) {
    if (rest.empty()) break;
    if (sides[d][0]) {
      const long cut = std::min(rest.low[d] + width, rest.high[d]);
      Box3 slab = rest;
      slab.high[d] = cut;
      if (!slab.empty()) shell.push_back(slab);
      rest.low[d] = cut;
    }
    if (sides[d][1]) {
      const long cut = std::max(rest.high[d] - width, rest.low[d]);
      Box3 slab = rest;
      slab.low[d] = cut;
      if (!slab.empty()) shell.push_back(slab);
      rest.high[d] = cut;
    }
  }
  interior = rest.empty() ? Box3{} : rest;
  return shell;
}

OverlapPlan::OverlapPlan(const std::array<long, 3>& extent, int width, const ExchangedSides& sides,
                         const OverlapOptions& options, UntiledRows rows)
    : options_(options) {
  if (width < 1) throw InvalidArgument("shell width must be >= 1, got " + std::to_string(width));
  if (options.tile)
    for (int d = 0; d < 3; ++d)
      if ((*options.tile)[d] < 1)
        throw InvalidArgument("tile size must be >= 1, got " + std::to_string((*options.tile)[d]));
  all_ = tile_box(Box3{{0, 0, 0}, extent}, options.tile, rows);
  const auto shell = shell_boxes(extent, width, sides, interior_box_);
  interior_ = tile_box(interior_box_, options.tile, rows);
  for (const Box3& b : shell) {
    auto items = tile_box(b, options.tile, rows);
    shell_.insert(shell_.end(), items.begin(), items.end());
  }
}

nlohmann::json CommThreadModel::to_json() const {
  return {{"C", comm_fraction}, {"P", threads}, {"relative_time", relative_time}, {"predicted_s", predicted_s}};
}

CommThreadModel model_comm_thread(const OverlapTimes& bulk, int threads) {
  if (threads < 2)
    throw InvalidArgument("the comm-thread model needs P >= 2 threads, got " + std::to_string(threads));
  if (bulk.comm_s < 0 || bulk.comp_s < 0 || bulk.comm_s + bulk.comp_s <= 0)
    throw InvalidArgument("the comm-thread model needs positive bulk times, got comm " + std::to_string(bulk.comm_s) +
                          " s and comp " + std::to_string(bulk.comp_s) + " s");
  CommThreadModel m;
  m.threads = threads;
  m.comm_fraction = bulk.comm_s / (bulk.comm_s + bulk.comp_s);
  const double p = threads;
  // Kaiser and Baden, "Overlapping communication and computation with OpenMP and MPI", §4.2: the bulk step
  // takes 1 = C + (1 - C); the P (1 - C) work moves onto P - 1 threads while the spare thread communicates,
  // which is fully hidden as long as C <= T.
  m.relative_time = std::max(p * (1.0 - m.comm_fraction) / (p - 1.0), m.comm_fraction);
  m.predicted_s = m.relative_time * bulk.wall_s;
  return m;
}

OverlapDriver::OverlapDriver(const CartDecomposition& cart, const Grid3D<double>& shape, HaloPattern pattern,
                             int reach, const OverlapOptions& options, UntiledRows rows)
    : halo_(cart, shape, pattern),
      plan_(shape.extent(), std::max(reach, shape.ghost()), exchanged_sides(cart), options, rows) {
  if (reach < 1 || reach > shape.ghost())
    throw InvalidArgument("stencil reach " + std::to_string(reach) + " must be between 1 and the ghost width " +
                          std::to_string(shape.ghost()));
  options.validate(omp_get_max_threads());
  if (options.strategy == OverlapStrategy::comm_thread) {
    int provided = MPI_THREAD_SINGLE, main_thread = 0;
    HYMPI_MPI(MPI_Query_thread(&provided));
    HYMPI_MPI(MPI_Is_thread_main(&main_thread));
    if (provided < MPI_THREAD_FUNNELED)
      throw Error("strategy commthread needs MPI_THREAD_FUNNELED or higher; MPI provides level " +
                  std::to_string(provided));
    if (main_thread == 0) throw Error("strategy commthread must be driven from the thread that initialised MPI");
  }
}

}  // namespace hympi
