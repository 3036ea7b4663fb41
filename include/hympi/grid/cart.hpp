#pragma once
// Cartesian block decomposition of a global 3D grid over a process grid.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <vector>

#include "hympi/grid/box.hpp"
#include "hympi/core/comm.hpp"

namespace hympi {

/// Every factorisation ranks = px*py*pz that keeps the `fixed` entries (> 0), px then py increasing.
std::vector<std::array<int, 3>> process_grid_factorisations(int ranks, const std::array<int, 3>& fixed);

/// Internal face area of process grid `p` over a grid of `points` per axis: what halo traffic scales with.
double internal_face_area(const std::array<int, 3>& p, const std::array<double, 3>& points);

/// Picks a process grid for `ranks` over a grid of `global` points: every factorisation
/// ranks = px*py*pz with p[d] <= global[d] is considered and the one with the least internal
/// face area wins (ties split the slowest axis, z, first, so halos stay contiguous).
/// `fixed` entries > 0 are kept as given. Throws InvalidArgument when no factorisation fits.
std::array<int, 3> choose_process_grid(int ranks, const std::array<long, 3>& global,
                                       const std::array<int, 3>& fixed = {0, 0, 0});

/// Picks a process grid for `ranks` when every rank owns `per_rank` points (the global grid is
/// per_rank x the process grid): the factorisation with the least internal face area of that
/// grid, ties as in choose_process_grid; `fixed` entries > 0 kept. Throws InvalidArgument naming
/// the value when per_rank has an entry < 1, ranks < 1, or the fixed entries cannot match ranks.
std::array<int, 3> choose_process_grid_per_rank(int ranks, const std::array<long, 3>& per_rank,
                                                const std::array<int, 3>& fixed = {0, 0, 0});

/// Bytes of the largest block of `global` points split over a `dims` process grid (the first blocks take the
/// remainder, block_range), with `ghost` layers of `element_bytes` elements and rows padded to 64-byte lines as
/// Grid3D pads them: what a memory estimate counts per field. In doubles, so no mistyped size overflows. Never
/// throws.
[[nodiscard]] double largest_block_bytes(const std::array<long, 3>& global, const std::array<int, 3>& dims, int ghost,
                                         std::size_t element_bytes);

/// Block partition of n points over p parts: the range of part c (remainder to the first parts).
Box3 block_range(const std::array<long, 3>& global, const std::array<int, 3>& dims, const std::array<int, 3>& coords);

/// Options of a Cartesian decomposition.
struct CartOptions {
  std::array<long, 3> global{0, 0, 0};
  std::array<bool, 3> periodic{false, false, false};
  std::array<int, 3> dims{0, 0, 0};  ///< 0: chosen by choose_process_grid
};

/// A rank's place in an MPI Cartesian communicator and the block of the grid it owns.
class CartDecomposition {
 public:
  /// Creates the Cartesian communicator over `comm` (collective). Axis 0 (x) is the fastest.
  CartDecomposition(MPI_Comm comm, const CartOptions& options);

  [[nodiscard]] MPI_Comm comm() const noexcept { return cart_.get(); }
  [[nodiscard]] int rank() const noexcept { return rank_; }
  [[nodiscard]] int size() const noexcept { return size_; }
  [[nodiscard]] const std::array<int, 3>& dims() const noexcept { return dims_; }
  [[nodiscard]] const std::array<int, 3>& coords() const noexcept { return coords_; }
  [[nodiscard]] const std::array<long, 3>& global() const noexcept { return options_.global; }
  [[nodiscard]] const std::array<bool, 3>& periodic() const noexcept { return options_.periodic; }
  /// The global indexes this rank owns.
  [[nodiscard]] const Box3& local_box() const noexcept { return box_; }
  /// Rank of the neighbour at offset (dx, dy, dz) in {-1,0,1}, or MPI_PROC_NULL past a wall.
  [[nodiscard]] int neighbour(const std::array<int, 3>& offset) const;
  /// Smallest local extent over all ranks per axis (what ghost widths must not exceed).
  [[nodiscard]] std::array<long, 3> min_local_extent() const;

 private:
  CartOptions options_;
  Comm cart_;
  int rank_ = 0, size_ = 1;
  std::array<int, 3> dims_{1, 1, 1}, coords_{0, 0, 0};
  Box3 box_;
};

}  // namespace hympi
