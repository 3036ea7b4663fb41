#pragma once
// spmv3d's problem, operator and solver options, their names and their JSON record.
#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "hympi/core/enum_names.hpp"
#include "hympi/grid/overlap.hpp"

namespace hympi {

/// How the operator is applied: matrix-free stencil or an assembled CSR matrix.
enum class SpmvOperator { stencil, csr };

contract::SpmvOperatorNames<SpmvOperator> enum_names(SpmvOperator);
/// Parses "stencil|csr"; throws InvalidArgument naming the value otherwise.
inline SpmvOperator parse_spmv_operator(const std::string& text) { return parse_enum<SpmvOperator>(text); }

/// Whether the product writes y with non-temporal (cache-bypassing) stores.
enum class StreamingStores { automatic, on, off };

contract::StreamingStoresNames<StreamingStores> enum_names(StreamingStores);
/// Parses "auto|on|off"; throws InvalidArgument naming the value otherwise.
inline StreamingStores parse_streaming_stores(const std::string& text) { return parse_enum<StreamingStores>(text); }

/// Per-rank bytes a product sweeps past y's lines (y, and the CSR matrix) from which `automatic`
/// streams: past the caches a store would only cost a read-for-ownership, below it y is better left
/// in cache for the next reader.
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
  OverlapOptions overlap{};
  int spmv_reps = 20;           ///< timed y = A x products; the least with min_time_s
  double min_time_s = 0.0;      ///< positive: more products until they have lasted this many seconds
  int cg_iterations = 500;      ///< CG iteration limit; 0 skips the solve
  double cg_tolerance = 1e-10;  ///< stop at ||r|| / ||r0|| <= this
  /// Never changes results. Streaming saves y's read-for-ownership: with cache-line aligned rows
  /// it took the 256^3 stencil product from ~0.7 to ~0.8 of the triad bound (docs/performance.md).
  StreamingStores streaming_stores = StreamingStores::automatic;
  /// Throws InvalidArgument naming the first bad value for `ranks` x `threads`.
  void validate(int ranks, int threads) const;
  /// validate(ranks, omp_get_max_threads()); throws as that does.
  void validate(int ranks) const;
  /// The global grid and process grid these options give on `ranks` ranks; throws
  /// InvalidArgument naming a bad size or process grid.
  [[nodiscard]] std::pair<std::array<long, 3>, std::array<int, 3>> resolve(int ranks) const;
  /// Bytes one product touches on the largest of `ranks` ranks: x and y with ghosts, and the CSR matrix for
  /// op == csr (what the app's and the benchmark's memory estimates and their bound's triad are sized by);
  /// throws as resolve does.
  [[nodiscard]] double product_bytes(int ranks) const;
  /// Every option, for the result record; never fails.
  [[nodiscard]] nlohmann::json to_json() const;
};

}  // namespace hympi
