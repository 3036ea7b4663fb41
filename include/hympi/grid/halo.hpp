#pragma once
// Ghost-layer exchange of a Grid3D with its 6 (faces) or 26 (faces, edges, corners) neighbours.
#include <mpi.h>

#include <array>
#include <span>
#include <vector>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/requests.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/grid/grid3d.hpp"

namespace hympi {

/// Which neighbours exchange ghosts: 6 face neighbours, or all 26.
enum class HaloPattern { faces, full };

contract::HaloPatternNames<HaloPattern> enum_names(HaloPattern);

/// Persistent nonblocking exchange of ghost layers; begin()/end() split it so work can overlap.
///
/// Works for any ghost width g >= 1 not larger than the smallest block, any process grid
/// (1 rank, size-1 axes and periodic self-neighbours included). Packing and unpacking run as
/// OpenMP loops when called outside a parallel region, serially inside one.
class HaloExchange {
 public:
  /// Sets up buffers and persistent requests for grids shaped like `grid` (collective-free).
  /// Throws InvalidArgument if the ghost width exceeds a block's extent.
  HaloExchange(const CartDecomposition& cart, const Grid3D<double>& grid, HaloPattern pattern);
  HaloExchange(const HaloExchange&) = delete;
  HaloExchange& operator=(const HaloExchange&) = delete;

  /// Packs the owned boundary of `grid` and starts all sends and receives.
  /// Throws Error when the previous begin() has not been ended, MpiError when MPI fails.
  void begin(Grid3D<double>& grid);
  /// Waits for all messages and unpacks them into the ghost layers of `grid`.
  /// Throws Error without a begin(), MpiError when MPI fails.
  void end(Grid3D<double>& grid);
  /// begin() then end().
  void exchange(Grid3D<double>& grid) {
    begin(grid);
    end(grid);
  }
  /// Number of neighbour messages per exchange (neighbours past a wall excluded).
  [[nodiscard]] int messages() const { return static_cast<int>(links_.size()); }
  /// Bytes this rank sends per exchange.
  [[nodiscard]] std::size_t bytes_sent() const;

 private:
  struct Link {
    int peer;
    std::array<int, 3> offset;  // direction of the peer
    Box3 send_box;  // local coordinates
    Box3 recv_box;
    std::vector<double> send_buffer, recv_buffer;
  };
  std::vector<Link> links_;
  PersistentRequests requests_;  // after links_: destroyed first, while the buffers still exist
};

}  // namespace hympi
