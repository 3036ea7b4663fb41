#pragma once
// Zones -> ranks. NPB-MZ balances uneven zones by bin packing (largest zone first onto the
// emptiest rank, preferring zones that share faces with that rank) and can give loaded ranks
// more OpenMP threads; OVERFLOW instead splits big zones so that more ranks can be balanced,
// at the price of extra overlap points (Jin et al. 2011, sections 3.1, 3.2, Table 3).
#include "hympi/core/enum_names.hpp"
#include "hympi/npb/zone_grid.hpp"

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

namespace hympi {

/// How zones are packed onto ranks.
enum class PackingMethod {
  npb,  ///< the reference map_zones: largest first, emptiest rank, prefer shared faces (5% window)
  lpt   ///< longest-processing-time: largest first onto the emptiest rank, nothing else
};

contract::PackingMethodNames<PackingMethod> enum_names(PackingMethod);
/// Parses "npb" or "lpt"; throws InvalidArgument naming the value otherwise.
[[nodiscard]] inline PackingMethod parse_packing_method(const std::string& name) {
  return parse_enum<PackingMethod>(name);
}

/// Options of a ZonePartition; validated by the ZonePartition constructor.
struct ZonePartitionOptions {
  PackingMethod method = PackingMethod::npb;
  /// Threads per rank before balancing; every rank starts with this many.
  int threads_per_rank = 1;
  /// Redistribute the total thread count in proportion to rank load (NPB_MZ_BLOAD).
  bool balance_threads = false;
  /// Upper limit per rank when balancing threads; 0 means no limit (NPB_MAX_THREADS).
  int max_threads = 0;

  /// Options as JSON, for result records.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Places item i (weight w[i]) by LPT; returns the owner of each item. Ties go to the lower rank.
[[nodiscard]] std::vector<int> pack_lpt(const std::vector<double>& weights, int nranks);

/// A map of zones to ranks and threads to ranks, with the load balance it achieves.
class ZonePartition {
 public:
  /// Maps `grid` onto `nranks` ranks. Throws InvalidArgument when nranks is < 1 or larger than
  /// the number of zones, or when the thread options are out of range.
  ZonePartition(const ZoneGrid& grid, int nranks, const ZonePartitionOptions& options = {});

  [[nodiscard]] int num_ranks() const noexcept { return nranks_; }
  [[nodiscard]] const ZonePartitionOptions& options() const noexcept { return options_; }
  /// Rank that owns zone `zone`.
  [[nodiscard]] int owner(int zone) const { return owner_.at(static_cast<std::size_t>(zone)); }
  [[nodiscard]] const std::vector<int>& owners() const noexcept { return owner_; }
  /// Zones owned by `rank`, ascending.
  [[nodiscard]] const std::vector<int>& zones_of(int rank) const { return zones_of_.at(static_cast<std::size_t>(rank)); }
  /// Points owned by `rank`.
  [[nodiscard]] double load(int rank) const { return load_.at(static_cast<std::size_t>(rank)); }
  /// OpenMP threads assigned to `rank`.
  [[nodiscard]] int threads(int rank) const { return threads_.at(static_cast<std::size_t>(rank)); }
  /// Sum of threads over ranks.
  [[nodiscard]] int total_threads() const noexcept;
  /// max over ranks of load/thread divided by the mean load per thread (1 = perfect).
  [[nodiscard]] double imbalance() const noexcept;
  /// Total points / max load per thread: the speedup the map allows (the reference's estimate).
  [[nodiscard]] double speedup() const noexcept;
  /// Map, loads, threads and imbalance as JSON.
  [[nodiscard]] nlohmann::json to_json() const;

 private:
  void pack_npb(const ZoneGrid& grid);
  void balance_threads();

  int nranks_;
  ZonePartitionOptions options_;
  std::vector<double> weight_;
  std::vector<int> owner_;
  std::vector<std::vector<int>> zones_of_;
  std::vector<double> load_;
  std::vector<int> threads_;
};

/// Prints one line per rank: rank, zones, load, threads.
std::ostream& operator<<(std::ostream& os, const ZonePartition& partition);

/// A piece of a zone after splitting: a box of the parent zone (offsets in parent points).
struct ZoneBlock {
  int zone = 0;
  int x0 = 0;
  int y0 = 0;
  int nx = 0;
  int ny = 0;
  int nz = 0;
  /// Points of the block, its new overlap boundaries included.
  [[nodiscard]] double points() const noexcept { return double(nx) * ny * nz; }
};

/// Result of split_zones: the blocks, the extra points they cost, and how well LPT balances them.
struct ZoneSplit {
  std::vector<ZoneBlock> blocks;
  double original_points = 0.0;
  double total_points = 0.0;  ///< incl. the duplicated boundary points at every cut
  int splits = 0;
  double imbalance = 1.0;  ///< of an LPT packing of the blocks on `nranks`
  int nranks = 1;
  /// total_points / original_points - 1.
  [[nodiscard]] double extra_fraction() const noexcept { return total_points / original_points - 1.0; }
  /// Blocks, points and imbalance as JSON (Jin et al.'s Table 3 columns and more).
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Splits the largest block in half (across its longer horizontal side; each cut duplicates one
/// plane of boundary points per side, as zones overlap by one point) until no block exceeds the
/// mean per rank by more than `tolerance` or the largest block is too thin to cut.
/// Throws InvalidArgument for nranks < 1 or a negative tolerance.
[[nodiscard]] ZoneSplit split_zones(const ZoneGrid& grid, int nranks, double tolerance = 0.05);

}  // namespace hympi
