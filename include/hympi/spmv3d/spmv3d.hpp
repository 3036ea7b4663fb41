#pragma once
// 27-point operator on a structured 3D grid (HPCG's matrix): SpMV and CG, stencil or CSR.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "hympi/grid/cart.hpp"
#include "hympi/grid/grid3d.hpp"
#include "hympi/core/metrics.hpp"
#include "hympi/grid/overlap.hpp"

namespace hympi {

/// How the operator is applied: matrix-free stencil or an assembled CSR matrix.
enum class SpmvOperator { stencil, csr };

template <>
struct EnumNames<SpmvOperator> : contract::SpmvOperatorNames<SpmvOperator> {};
/// Parses "stencil|csr"; throws InvalidArgument naming the value otherwise.
inline SpmvOperator parse_spmv_operator(const std::string& text) { return parse_enum<SpmvOperator>(text); }

/// Whether the stencil writes y with non-temporal (cache-bypassing) stores.
enum class StreamingStores { automatic, on, off };

template <>
struct EnumNames<StreamingStores> : contract::StreamingStoresNames<StreamingStores> {};
/// Parses "auto|on|off"; throws InvalidArgument naming the value otherwise.
inline StreamingStores parse_streaming_stores(const std::string& text) { return parse_enum<StreamingStores>(text); }

/// Per-rank size of y from which `automatic` streams: past the caches a store would only cost
/// a read-for-ownership, below it y is better left in cache for the next reader.
inline constexpr double kSpmv3dStreamingBytes = 32.0 * 1024 * 1024;

/// Problem, operator and solver options of spmv3d.
///
/// The operator is HPCG's: 26 on the diagonal, -1 for each of the up to 26 neighbours inside
/// the global grid (Dirichlet walls, no periodicity).
struct Spmv3dOptions {
  std::array<long, 3> global{64, 64, 64};
  std::array<long, 3> per_rank{0, 0, 0};  ///< all > 0: the grid is this times the process grid
  std::array<int, 3> dims{0, 0, 0};       ///< process grid, 0 = chosen automatically
  int ghost = 1;                          ///< ghost width (the stencil needs 1; wider is allowed)
  SpmvOperator op = SpmvOperator::stencil;
  OverlapOptions overlap;
  int spmv_reps = 20;           ///< timed y = A x products; the least with min_time_s
  double min_time_s = 0.0;      ///< positive: more products until they have lasted this many seconds
  int cg_iterations = 500;      ///< CG iteration limit; 0 skips the solve
  double cg_tolerance = 1e-10;  ///< stop at ||r|| / ||r0|| <= this
  /// Stencil only, never changes results. Streaming saves y's read-for-ownership: with
  /// cache-line aligned rows it took the 256^3 product from ~0.7 to ~0.8 of the triad bound
  /// (docs/performance.md).
  StreamingStores streaming_stores = StreamingStores::automatic;
  /// Throws InvalidArgument naming the first bad value for `ranks` x `threads`.
  void validate(int ranks, int threads) const;
  /// validate(ranks, omp_get_max_threads()).
  void validate(int ranks) const;
  /// The global grid and process grid these options give on `ranks` ranks (validated).
  [[nodiscard]] std::pair<std::array<long, 3>, std::array<int, 3>> resolve(int ranks) const;
  /// Every option, for the result record.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Process grid for blocks of `local` points per rank: the factorisation of `ranks` with the
/// least internal face area of the resulting grid (fixed entries > 0 kept).
std::array<int, 3> process_grid_for_local(int ranks, const std::array<long, 3>& local,
                                          const std::array<int, 3>& fixed);

/// Nonzeros of the operator on a global grid: prod over axes of (3 n - 2).
double spmv3d_nonzeros(const std::array<long, 3>& global);

/// The operator on one rank's block, applied through an OverlapDriver.
class Operator27 {
 public:
  /// Builds the operator for the blocks of `cart` (assembling the CSR matrix if asked).
  Operator27(const CartDecomposition& cart, const Spmv3dOptions& options);
  /// y = A x on owned points; exchanges the ghosts of x first (collective).
  OverlapTimes apply(Grid3D<double>& x, Grid3D<double>& y);
  /// A grid shaped like the operator's vectors (ghosts included), zero-filled, first touched.
  [[nodiscard]] Grid3D<double> make_vector() const { return Grid3D<double>(cart_.local_box(), ghost_); }
  /// The decomposition the operator was built for.
  [[nodiscard]] const CartDecomposition& cart() const noexcept { return cart_; }
  /// The halo/compute driver (strategy, work plan).
  [[nodiscard]] const OverlapDriver& driver() const noexcept { return driver_; }
  /// Locally stored nonzeros (CSR), 0 for the stencil.
  [[nodiscard]] std::size_t stored_nonzeros() const noexcept { return nonzeros_; }
  /// Compulsory bytes moved per product by this rank in STREAM's convention (no write-allocate).
  [[nodiscard]] double bytes_per_apply() const;
  /// Whether the stencil writes y with non-temporal stores.
  [[nodiscard]] bool streaming_stores() const noexcept { return streaming_; }

 private:
  const CartDecomposition& cart_;
  int ghost_;
  SpmvOperator op_;
  OverlapDriver driver_;
  bool streaming_ = false;
  // CSR: rows in owned-point order (x fastest); columns index the ghosted storage of x.
  // Raw arrays, not vectors: the assembly loop, not the allocation, must first-touch them.
  std::size_t nonzeros_ = 0;
  std::unique_ptr<std::int64_t[]> row_start_;
  std::unique_ptr<std::int32_t[]> columns_;
  std::unique_ptr<double[]> values_;
};

/// y(p) - (26 x(p) - sum of x over p's in-grid neighbours), computed exactly in integers for
/// x(p) = x_id(p) = 1 + global linear index; returns how many owned points differ (collective).
long spmv3d_count_mismatches(const CartDecomposition& cart, const Grid3D<double>& y);
/// Fills owned points of x with x_id (see spmv3d_count_mismatches).
void spmv3d_fill_ids(const CartDecomposition& cart, Grid3D<double>& x);

/// What a run produced.
struct Spmv3dResult {
  std::array<long, 3> global{};
  std::array<int, 3> dims{1, 1, 1};
  double nonzeros = 0;
  bool streaming_stores = false;
  // Repeated SpMV.
  int spmv_reps = 0;           ///< products timed (spmv_reps of the options, or more to reach min_time_s)
  double spmv_time_s = 0;      ///< all reps, max over ranks
  OverlapTimes spmv_times;     ///< all reps, average over ranks
  double spmv_flops = 0;       ///< 2 * nonzeros * reps
  double spmv_bytes = 0;       ///< compulsory traffic of all reps, all ranks (Operator27::bytes_per_apply)
  long spmv_mismatches = -1;   ///< owned points where y != A x_id exactly (0 = correct)
  // CG.
  std::vector<double> cg_residuals;  ///< ||r_k||, bitwise identical for every layout and strategy
  int cg_iterations = 0;
  bool cg_converged = false;
  double cg_time_s = 0;       ///< max over ranks
  double cg_max_error = 0;    ///< max |x - x*| / max |x*|
  double cg_flops = 0;
};

/// Runs repeated SpMV and CG on `comm` (collective): the phases of the timed products go to
/// `spmv_metrics` ("spmv_halo", "spmv_compute"), those of the timed CG loop to `cg_metrics`
/// ("cg_halo", "cg_spmv", "cg_dot", "cg_allreduce", "cg_update"). Throws InvalidArgument for
/// options that do not validate on this communicator.
Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& spmv_metrics, Metrics& cg_metrics);
/// run_spmv3d with both regions' phases in one `metrics`.
Spmv3dResult run_spmv3d(MPI_Comm comm, const Spmv3dOptions& options, Metrics& metrics);

/// Largest CG error (relative to max |x*|) verification accepts.
inline constexpr double kSpmv3dErrorBound = 1e-6;

}  // namespace hympi
