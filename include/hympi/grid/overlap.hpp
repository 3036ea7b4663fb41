#pragma once
// Overlap of halo exchange and stencil computation: bulk, split phase, dedicated comm thread.
//
// A kernel is any callable `void(const Box3&)` that computes the points of one box of local
// coordinates serially; the strategies only decide which thread computes which box and when
// the ghost layers are guaranteed to be current. Every point is computed exactly once by the
// same kernel code, so all strategies and tile sizes give the same bits.
#include <mpi.h>
#include <omp.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hympi/grid/box.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/core/error.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/grid/halo.hpp"

namespace hympi {

/// How halo exchange and computation are ordered.
enum class OverlapStrategy {
  bulk,        ///< exchange, then compute everything with loop-level OpenMP
  split,       ///< begin exchange, compute interior, end exchange, compute the boundary shell
  comm_thread  ///< thread 0 drives MPI while the others compute interior regions (Kaiser and Baden, §4.2)
};

contract::OverlapStrategyNames<OverlapStrategy> enum_names(OverlapStrategy);
/// Parses "bulk|split|commthread"; throws InvalidArgument naming the value otherwise.
inline OverlapStrategy parse_overlap_strategy(const std::string& text) { return parse_enum<OverlapStrategy>(text); }

/// Strategy and cache blocking of one stencil sweep.
struct OverlapOptions {
  OverlapStrategy strategy = OverlapStrategy::bulk;
  /// Cache-block edge per axis (x, y, z); empty: untiled, work is handed out as x-rows (UntiledRows).
  std::optional<std::array<long, 3>> tile;
  /// Throws InvalidArgument for a tile edge < 1, or comm_thread with fewer than 2 threads.
  void validate(int threads) const;
  /// {"strategy": ..., "tile": [tx, ty, tz] or null}.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The x-rows untiled work is handed out in: a property of the kernel, not a user's choice.
enum class UntiledRows {
  /// Rows of two consecutive z-planes: a stencil computes both from the four planes of its input they read
  /// (rb3d, spmv3d's stencil).
  plane_pairs,
  /// Rows of one z-plane, in storage order: a kernel that streams a matrix stored row by row (spmv3d's CSR)
  /// reads it as one stream. Handed out in pairs, it read the matrix as two streams a plane apart: on the
  /// 2-core Zen 4 VM the product then ran at 0.80-0.84 of the same kernel called on the whole block in the
  /// same process, a rate single planes keep (docs/performance.md, "the cause found").
  single_planes,
};

/// Which sides of the block receive ghosts from a neighbour: [axis][0 = low, 1 = high].
using ExchangedSides = std::array<std::array<bool, 2>, 3>;

/// The sides of `cart`'s local block that have a neighbour (walls excluded, periodic included).
ExchangedSides exchanged_sides(const CartDecomposition& cart);

/// Splits `box` into cache blocks of edge `tile` anchored at box.low (x-rows of the box as `rows` says when
/// `tile` is empty), z-block outermost, x innermost: the order the kernels stream memory in.
std::vector<Box3> tile_box(const Box3& box, const std::optional<std::array<long, 3>>& tile, UntiledRows rows);

/// The boxes of the shell of width `width` around the block [0, extent) on the exchanged
/// sides, disjoint; `interior` receives the rest (possibly empty). Points of the interior do
/// not read ghosts of a stencil of reach <= width, and a halo of ghost width <= width does not
/// pack them, so they can be computed while the exchange is in flight.
std::vector<Box3> shell_boxes(const std::array<long, 3>& extent, int width, const ExchangedSides& sides,
                              Box3& interior);

/// The work items of one sweep, split by dependence on the halo (the two region sets of Kaiser and Baden,
/// "Overlapping communication and computation with OpenMP and MPI", §4.2 and Fig. 1).
class OverlapPlan {
 public:
  /// Plans a block of `extent` owned points with a shell of `width` on the `sides` that
  /// exchange. Throws InvalidArgument for width < 1 or bad options.
  OverlapPlan(const std::array<long, 3>& extent, int width, const ExchangedSides& sides,
              const OverlapOptions& options, UntiledRows rows);
  /// Work items covering the whole block (bulk).
  [[nodiscard]] const std::vector<Box3>& all() const noexcept { return all_; }
  /// Work items that do not depend on the halo.
  [[nodiscard]] const std::vector<Box3>& interior() const noexcept { return interior_; }
  /// Work items that need current ghosts.
  [[nodiscard]] const std::vector<Box3>& shell() const noexcept { return shell_; }
  /// The box the interior items tile (empty when the shell covers the block).
  [[nodiscard]] const Box3& interior_box() const noexcept { return interior_box_; }
  /// The options the plan was made with.
  [[nodiscard]] const OverlapOptions& options() const noexcept { return options_; }

 private:
  OverlapOptions options_;
  Box3 interior_box_;
  std::vector<Box3> all_, interior_, shell_;
};

/// Where the time of one or more sweeps went, on this rank.
struct OverlapTimes {
  double wall_s = 0;  ///< elapsed time of the sweeps
  double comm_s = 0;  ///< packing, starting, waiting and unpacking (by the thread doing MPI)
  double comp_s = 0;  ///< kernel time (overlapped with comm_s under split/comm_thread)
  /// Each time divided by `steps` (sweeps, products): runs of different lengths compare per step.
  [[nodiscard]] OverlapTimes per(double steps) const { return {wall_s / steps, comm_s / steps, comp_s / steps}; }
  /// Accumulates another sweep's times.
  OverlapTimes& operator+=(const OverlapTimes& o) {
    wall_s += o.wall_s;
    comm_s += o.comm_s;
    comp_s += o.comp_s;
    return *this;
  }
};

/// Kaiser and Baden's model (§4.2) of sparing one of P threads for communication: T = P (1 - C) / (P - 1).
struct CommThreadModel {
  double comm_fraction = 0;  ///< C = t_comm / (t_comm + t_comp) measured without overlap
  int threads = 0;           ///< P
  double relative_time = 0;  ///< T = P (1 - C) / (P - 1), the bulk time normalised to 1
  double predicted_s = 0;    ///< T times the measured bulk time
  /// {"C", "P", "relative_time", "predicted_s"}.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Predicts the comm_thread time from a bulk measurement (C from its comm and comp times).
/// Throws InvalidArgument for threads < 2 or negative times.
CommThreadModel model_comm_thread(const OverlapTimes& bulk, int threads);

/// Runs stencil sweeps over one rank's block with a chosen overlap strategy.
///
/// Owns the HaloExchange of the grid that the kernel reads through its ghosts. Must be used
/// from the thread that initialised MPI (MPI_THREAD_FUNNELED suffices).
class OverlapDriver {
 public:
  /// Sets up the exchange of grids shaped like `shape` and the work plan; `reach` is the
  /// stencil's reach (<= ghost width). Throws InvalidArgument for bad options or a ghost
  /// width the blocks cannot hold, Error when comm_thread lacks MPI_THREAD_FUNNELED.
  OverlapDriver(const CartDecomposition& cart, const Grid3D<double>& shape, HaloPattern pattern, int reach,
                const OverlapOptions& options, UntiledRows rows);

  /// Brings the ghosts of `exchanged` up to date and calls `kernel` once on boxes that cover
  /// every owned point exactly once. The kernel may read `exchanged` anywhere within its
  /// reach and may write points of the box it is given (in any grid). Collective over the
  /// Cartesian communicator. Throws MpiError when the exchange fails and rethrows the first
  /// exception a kernel call threw once the exchange has completed.
  template <class Kernel>
  OverlapTimes apply(Grid3D<double>& exchanged, Kernel&& kernel);

  /// The work items per phase.
  [[nodiscard]] const OverlapPlan& plan() const noexcept { return plan_; }
  /// The exchange, for callers that need plain ghost updates (e.g. before a residual).
  [[nodiscard]] HaloExchange& halo() noexcept { return halo_; }
  /// The strategy apply() uses.
  [[nodiscard]] OverlapStrategy strategy() const noexcept { return plan_.options().strategy; }

 private:
  HaloExchange halo_;
  OverlapPlan plan_;
};

// --- implementation of the template -------------------------------------------------------

namespace detail {
/// Runs `kernel` over `items` with a static loop-level schedule (a team of its own); what a
/// kernel call throws lands in `errors`.
template <class Kernel>
void for_items(const std::vector<Box3>& items, Kernel& kernel, ParallelErrors& errors) {
  const long count = static_cast<long>(items.size());
#pragma omp parallel for schedule(static)
  for (long t = 0; t < count; ++t) errors.capture([&] { kernel(items[static_cast<std::size_t>(t)]); });
}
}  // namespace detail

template <class Kernel>
OverlapTimes OverlapDriver::apply(Grid3D<double>& exchanged, Kernel&& kernel) {
  OverlapTimes times;
  // A kernel's exception is rethrown only after the exchange completed, so no request is left
  // in flight and the driver stays usable.
  ParallelErrors errors;
  const double t0 = omp_get_wtime();
  switch (plan_.options().strategy) {
    case OverlapStrategy::bulk: {
      halo_.exchange(exchanged);
      const double t1 = omp_get_wtime();
      detail::for_items(plan_.all(), kernel, errors);
      const double t2 = omp_get_wtime();
      times = {t2 - t0, t1 - t0, t2 - t1};
      break;
    }
    case OverlapStrategy::split: {
      halo_.begin(exchanged);
      const double t1 = omp_get_wtime();
      detail::for_items(plan_.interior(), kernel, errors);
      const double t2 = omp_get_wtime();
      halo_.end(exchanged);
      const double t3 = omp_get_wtime();
      detail::for_items(plan_.shell(), kernel, errors);
      const double t4 = omp_get_wtime();
      times = {t4 - t0, (t1 - t0) + (t3 - t2), (t2 - t1) + (t4 - t3)};
      break;
    }
    case OverlapStrategy::comm_thread: {
      const auto& interior = plan_.interior();
      const auto& shell = plan_.shell();
      const long n_interior = static_cast<long>(interior.size());
      const long n_shell = static_cast<long>(shell.size());
      double comm_s = 0, interior_s = 0, shell_s = 0;
      // Every thread must still reach the barrier and the shell loop after an error.
#pragma omp parallel
      {
        const int tid = omp_get_thread_num();
        const int team = omp_get_num_threads();
        const double start = omp_get_wtime();
        if (tid == 0) {
          // Thread 0 is the thread that initialised MPI: FUNNELED is enough.
          errors.capture([&] {
            halo_.begin(exchanged);  // packs serially: we are inside a parallel region
            halo_.end(exchanged);
          });
          comm_s = omp_get_wtime() - start;
        }
        // Kaiser and Baden's first region set: thread 0's region is empty, the others get one
        // contiguous region each (a team of one computes it after communicating).
        const int workers = team > 1 ? team - 1 : 1;
        const int worker = team > 1 ? tid - 1 : 0;
        if (worker >= 0) {
          const long lo = n_interior * worker / workers, hi = n_interior * (worker + 1) / workers;
          errors.capture([&] {
            for (long t = lo; t < hi; ++t) kernel(interior[static_cast<std::size_t>(t)]);
          });
          const double busy = omp_get_wtime() - start;
#pragma omp critical(hympi_overlap_time)
          interior_s = std::max(interior_s, busy);
        }
#pragma omp barrier
        const double shell_start = omp_get_wtime();
#pragma omp for schedule(static)
        for (long t = 0; t < n_shell; ++t) errors.capture([&] { kernel(shell[static_cast<std::size_t>(t)]); });
        // The implicit barrier of the loop ends the sweep for everyone.
        if (tid == 0) shell_s = omp_get_wtime() - shell_start;
      }
      times = {omp_get_wtime() - t0, comm_s, interior_s + shell_s};
      break;
    }
  }
  errors.rethrow();
  return times;
}

}  // namespace hympi
