#pragma once
// One rank's part of the blade row: its group's blades, its rows of J, the group halo exchange of J ghost rows,
// the blade exchange of interpolated K ghost planes around the ring, and the update (explicit J/K, implicit I).
#include <mpi.h>

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "hympi/blades/kernels.hpp"
#include "hympi/blades/problem.hpp"
#include "hympi/core/comm.hpp"
#include "hympi/core/memory.hpp"
#include "hympi/core/requests.hpp"

namespace hympi::blades {

/// Seconds one rank spent in each phase of its iterations.
struct PhaseSeconds {
  double comp = 0;            ///< explicit update and line solves
  double group_halo = 0;      ///< J ghost rows inside the group
  double blade_exchange = 0;  ///< K ghost planes from the neighbouring blades (messages, copies, interpolation)
};

/// The blade row on the ranks of a communicator: block-distributed blades over size / ranks_per_group groups of
/// consecutive ranks, each group's ranks splitting J into contiguous rows, OpenMP threads splitting each rank's
/// rows again. The state after n steps is bitwise the same for every such layout.
class BladeRowSolver {
 public:
  /// Sets up this rank's blades at the exact initial state (first touch by the threads that update them) and
  /// the exchanges (collective over `comm`, which must outlive the solver). Throws InvalidArgument for a
  /// problem Problem::validate rejects, ranks_per_group < 1 or not dividing the ranks, more groups than blades or
  /// more ranks per group than J rows; MpiError when MPI fails; std::bad_alloc.
  BladeRowSolver(MPI_Comm comm, const Problem& problem, int ranks_per_group);

  /// One iteration (group halo, blade exchange, update), adding its phases' seconds to `seconds`; collective.
  /// Throws MpiError when an exchange fails.
  void step(PhaseSeconds& seconds);
  /// Steps done.
  [[nodiscard]] long steps() const noexcept { return steps_; }
  /// Time of the current state.
  [[nodiscard]] double time() const noexcept { return static_cast<double>(steps_) * exact_.dt(); }
  /// The state's order-independent checksum over every point of every blade (collective): the same for every
  /// layout exactly when the states are bitwise equal (up to hash collisions). Throws MpiError.
  [[nodiscard]] std::uint64_t checksum() const;
  /// max |u - exact| over every point of every blade (collective). Throws MpiError.
  [[nodiscard]] double max_error() const;
  /// The value at blade b's point (i, j, k) of the current state, for inspection and tests; throws
  /// InvalidArgument when this rank does not own the point.
  [[nodiscard]] float& at(long blade, long i, long j, long k);
  /// The manufactured solution and scheme coefficients it runs with.
  [[nodiscard]] const Manufactured& manufactured() const noexcept { return exact_; }
  /// This rank's blades and J rows.
  [[nodiscard]] Range blades() const noexcept { return blades_; }
  [[nodiscard]] Range rows() const noexcept { return rows_; }
  /// Bytes this rank sends per iteration in the group halo and in the blade exchange (copies not counted).
  [[nodiscard]] std::size_t group_halo_bytes() const noexcept { return group_halo_bytes_; }
  [[nodiscard]] std::size_t blade_exchange_bytes() const noexcept { return blade_exchange_bytes_; }
  /// Bytes of this rank's state arrays (two time levels with ghosts).
  [[nodiscard]] std::size_t state_bytes() const noexcept;
  /// This rank's state arrays of the current level, one per blade, for page-placement reports.
  [[nodiscard]] std::vector<std::span<const float>> state_arrays() const;

 private:
  struct Block {
    long blade = 0;
    std::array<UntouchedArray<float>, 2> u;  ///< two time levels
  };
  /// Where a ghost plane's neighbour rows come from: a local block's plane or a received buffer.
  struct GhostFill {
    std::size_t block = 0;  ///< the block whose ghost plane is filled
    int side = 0;           ///< 0: plane k = -1 (from blade b-1), 1: plane k = K (from blade b+1)
    Interpolation weights;
    long source_block = -1;  ///< local neighbour's block index, or -1: received
    std::size_t received = 0;  ///< offset of the received plane in receive_
  };
  /// A plane to send: block, plane k, offset in send_.
  struct Pack {
    std::size_t block = 0;
    long plane = 0;
    std::size_t offset = 0;
  };

  [[nodiscard]] std::size_t index(long row, long plane) const noexcept {
    // Rows of this rank's J range with a ghost row each side (row 0 = global j0 - 1), planes with a ghost plane
    // each side (plane 0 = k = -1); j outermost, so each J row range (a rank's, a thread's) is contiguous.
    return static_cast<std::size_t>((row * (nk_ + 2) + plane) * pitch_);
  }
  void initialise();
  void setup_group_halo();
  void setup_blade_exchange();
  void exchange_blades();
  void update();

  MPI_Comm comm_;
  Manufactured exact_;
  LineSolver line_;
  Comm group_;  ///< the ranks sharing this rank's blades, ordered along J
  Comm ring_;   ///< the ranks holding the same J rows in every group, ordered by group
  int n1_ = 1, ranks_per_group_ = 1, group_index_ = 0, rank_in_group_ = 0;
  long ni_ = 0, nj_ = 0, nk_ = 0, pitch_ = 0;
  Range blades_, rows_;
  long local_rows_ = 0;
  std::size_t block_elements_ = 0;
  std::vector<Block> blocks_;
  int current_ = 0;
  long steps_ = 0;
  std::array<PersistentRequests, 2> halo_;  ///< per time level: the state arrays are the buffers
  PersistentRequests blade_;
  std::vector<GhostFill> fills_;
  std::vector<Pack> packs_;
  std::vector<float> send_, receive_;
  std::size_t plane_message_ = 0;  ///< floats per blade-exchange message
  std::size_t group_halo_bytes_ = 0, blade_exchange_bytes_ = 0;
  /// One right-hand-side row per thread, each on pages of its own (scratch_stride_ floats apart from the first page
  /// boundary in scratch_). A thread writes its row in the innermost loop: with rows a malloc header apart, then
  /// 128 bytes apart (separate lines, but within reach of the L2 prefetchers, which pair lines and run ahead up to
  /// a page's end), the hybrid mode took 1.5-1.6x the MPI mode's time per iteration on a 16-core node; rows 1 KiB
  /// apart or on pages of their own cost what the MPI mode costs (docs/performance.md, 2026-11-30).
  UntouchedArray<float> scratch_;
  long scratch_stride_ = 0;
  /// Thread `thread`'s right-hand-side row (ni_ floats).
  [[nodiscard]] std::span<float> scratch_row(int thread) const noexcept;
};

}  // namespace hympi::blades
