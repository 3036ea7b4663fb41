#include "hympi/grid/cart.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <optional>
#include <string>

#include "hympi/core/error.hpp"

namespace hympi {

namespace {
std::string grid_text(const std::array<long, 3>& g) {
  return std::to_string(g[0]) + "x" + std::to_string(g[1]) + "x" + std::to_string(g[2]);
}

/// Why no factorisation of `ranks` keeps the `fixed` entries: the fixed product is not the rank
/// count (all fixed) or does not divide it.
std::string fixed_dims_mismatch(int ranks, const std::array<int, 3>& fixed) {
  long product = 1;
  bool all_fixed = true;
  for (int f : fixed) {
    if (f > 0) product *= f;
    all_fixed = all_fixed && f > 0;
  }
  const std::string dims =
      "process grid (--dims) " + std::to_string(fixed[0]) + " " + std::to_string(fixed[1]) + " " +
      std::to_string(fixed[2]);
  if (all_fixed)
    return dims + " has " + std::to_string(fixed[0]) + " x " + std::to_string(fixed[1]) + " x " +
           std::to_string(fixed[2]) + " = " + std::to_string(product) + " ranks, but the run has " +
           std::to_string(ranks);
  return dims + ": the fixed entries' product " + std::to_string(product) + " does not divide the " +
         std::to_string(ranks) + " ranks of the run";
}
}  // namespace

std::vector<std::array<int, 3>> process_grid_factorisations(int ranks, const std::array<int, 3>& fixed) {
  std::vector<std::array<int, 3>> out;
  for (int px = 1; px <= ranks; ++px) {
    if (ranks % px != 0 || (fixed[0] > 0 && px != fixed[0])) continue;
    for (int py = 1; py <= ranks / px; ++py) {
      if ((ranks / px) % py != 0 || (fixed[1] > 0 && py != fixed[1])) continue;
      const int pz = ranks / px / py;
      if (fixed[2] > 0 && pz != fixed[2]) continue;
      out.push_back({px, py, pz});
    }
  }
  return out;
}

double internal_face_area(const std::array<int, 3>& p, const std::array<double, 3>& g) {
  return (p[0] - 1) * g[1] * g[2] + (p[1] - 1) * g[0] * g[2] + (p[2] - 1) * g[0] * g[1];
}

namespace {
/// The factorisation of `ranks` keeping `fixed` with the least internal face area over the grid
/// `points(p)` gives for it; {0, 0, 0} when `points` returns nullopt for every candidate.
template <class Points>
std::array<int, 3> least_face_area(int ranks, const std::array<int, 3>& fixed, Points&& points) {
  if (ranks < 1) throw InvalidArgument("number of ranks must be >= 1, got " + std::to_string(ranks));
  for (int d = 0; d < 3; ++d)
    if (fixed[d] < 0) throw InvalidArgument("process grid entries must be >= 0, got " + std::to_string(fixed[d]));
  const auto candidates = process_grid_factorisations(ranks, fixed);
  if (candidates.empty()) throw InvalidArgument(fixed_dims_mismatch(ranks, fixed));
  std::array<int, 3> best{0, 0, 0};
  double best_area = std::numeric_limits<double>::infinity();
  for (const auto& p : candidates) {
    const std::optional<std::array<double, 3>> g = points(p);
    if (!g) continue;
    const double area = internal_face_area(p, *g);
    // Strict < keeps the first minimum in loop order: the fewest splits of x, then y.
    if (area < best_area) {
      best_area = area;
      best = p;
    }
  }
  return best;
}
}  // namespace

std::array<int, 3> choose_process_grid(int ranks, const std::array<long, 3>& global, const std::array<int, 3>& fixed) {
  for (int d = 0; d < 3; ++d)
    if (global[d] < 1) throw InvalidArgument("grid size must be >= 1 in every axis, got " + grid_text(global));
  const auto best = least_face_area(ranks, fixed, [&](const std::array<int, 3>& p) -> std::optional<std::array<double, 3>> {
    if (p[0] > global[0] || p[1] > global[1] || p[2] > global[2]) return std::nullopt;
    return std::array<double, 3>{static_cast<double>(global[0]), static_cast<double>(global[1]),
                                 static_cast<double>(global[2])};
  });
  if (best[0] == 0)
    throw InvalidArgument(std::to_string(ranks) + " ranks cannot be laid out on a " + grid_text(global) +
                          " grid without empty blocks");
  return best;
}

std::array<int, 3> choose_process_grid_per_rank(int ranks, const std::array<long, 3>& per_rank,
                                                const std::array<int, 3>& fixed) {
  for (int d = 0; d < 3; ++d)
    if (per_rank[d] < 1)
      throw InvalidArgument("per-rank grid size must be >= 1 on every axis, got " + grid_text(per_rank));
  // Every candidate fits (each rank gets per_rank points); the grid grows with the process grid.
  return least_face_area(ranks, fixed, [&](const std::array<int, 3>& p) -> std::optional<std::array<double, 3>> {
    return std::array<double, 3>{static_cast<double>(per_rank[0]) * p[0], static_cast<double>(per_rank[1]) * p[1],
                                 static_cast<double>(per_rank[2]) * p[2]};
  });
}

double largest_block_bytes(const std::array<long, 3>& global, const std::array<int, 3>& dims, int ghost,
                           std::size_t element_bytes) {
  std::array<double, 3> padded{};
  for (std::size_t d = 0; d < 3; ++d) {
    const long parts = std::max(dims[d], 1);
    padded[d] = double(global[d] / parts + (global[d] % parts > 0 ? 1 : 0)) + 2.0 * ghost;
  }
  const double line = std::max(1.0, 64.0 / double(element_bytes));
  return std::ceil(padded[0] / line) * line * padded[1] * padded[2] * double(element_bytes);
}

Box3 block_range(const std::array<long, 3>& global, const std::array<int, 3>& dims, const std::array<int, 3>& coords) {
  Box3 b;
  for (int d = 0; d < 3; ++d) {
    const long base = global[d] / dims[d], rem = global[d] % dims[d];
    const long c = coords[d];
    b.low[d] = c * base + std::min(c, rem);
    b.high[d] = b.low[d] + base + (c < rem ? 1 : 0);
  }
  return b;
}

CartDecomposition::CartDecomposition(MPI_Comm comm, const CartOptions& options) : options_(options) {
  int size = 1;
  HYMPI_MPI(MPI_Comm_size(comm, &size));
  dims_ = choose_process_grid(size, options.global, options.dims);
  std::array<int, 3> periods{};
  // MPI orders dims slowest-first; we keep x fastest, so hand MPI (z, y, x).
  std::array<int, 3> mpi_dims{dims_[2], dims_[1], dims_[0]};
  for (int d = 0; d < 3; ++d) periods[static_cast<std::size_t>(2 - d)] = options.periodic[d] ? 1 : 0;
  MPI_Comm cart = MPI_COMM_NULL;
  HYMPI_MPI(MPI_Cart_create(comm, 3, mpi_dims.data(), periods.data(), 0, &cart));
  cart_ = Comm(cart);
  rank_ = cart_.rank();
  size_ = size;
  std::array<int, 3> mpi_coords{};
  HYMPI_MPI(MPI_Cart_coords(cart, rank_, 3, mpi_coords.data()));
  coords_ = {mpi_coords[2], mpi_coords[1], mpi_coords[0]};
  box_ = block_range(options.global, dims_, coords_);
}

int CartDecomposition::neighbour(const std::array<int, 3>& offset) const {
  std::array<int, 3> c{};
  for (int d = 0; d < 3; ++d) {
    c[d] = coords_[d] + offset[d];
    if (c[d] < 0 || c[d] >= dims_[d]) {
      if (!options_.periodic[d]) return MPI_PROC_NULL;
      c[d] = (c[d] + dims_[d]) % dims_[d];
    }
  }
  std::array<int, 3> mpi_coords{c[2], c[1], c[0]};
  int r = MPI_PROC_NULL;
  HYMPI_MPI(MPI_Cart_rank(cart_.get(), mpi_coords.data(), &r));
  return r;
}

std::array<long, 3> CartDecomposition::min_local_extent() const {
  std::array<long, 3> out{};
  for (int d = 0; d < 3; ++d) out[d] = options_.global[d] / dims_[d];  // blocks differ by at most one
  return out;
}

}  // namespace hympi
