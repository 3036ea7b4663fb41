#pragma once
// Ping-pong latency and bandwidth per level of the communication hierarchy (same core, shared
// cache, NUMA domain, package, node, network), single pair and many pairs at once.
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "hympi/topology.hpp"

namespace hympi {

/// The smallest thing two ranks share, nearest first.
enum class CommLevel {
  pu,       ///< the same PU (time-shared: oversubscribed)
  core,     ///< SMT siblings of one core (or two ranks bound to one core)
  l2,       ///< different cores sharing an L2 (or L1)
  l3,       ///< sharing the last-level cache, not L2
  numa,     ///< one NUMA domain, no shared cache
  package,  ///< one package, different NUMA domains
  node,     ///< one node, different packages
  network   ///< different nodes (virtual nodes included: then it is still shared memory)
};
inline constexpr std::array<CommLevel, 8> kCommLevels = {CommLevel::pu,   CommLevel::core,    CommLevel::l2,
                                                         CommLevel::l3,   CommLevel::numa,    CommLevel::package,
                                                         CommLevel::node, CommLevel::network};

std::string to_string(CommLevel level);
/// Parses a level name; throws InvalidArgument naming the value otherwise.
CommLevel parse_comm_level(const std::string& text);

/// Level of two cpusets on one machine: the smallest hwloc object covering both decides.
/// Throws TopologyError when a set is empty or not in `topology`.
CommLevel classify_sets(const Topology& topology, const Bitmap& a, const Bitmap& b);

/// The cpuset the calling thread is bound to (the whole machine when unbound).
Bitmap current_binding(const Topology& topology);

/// Level of every pair of ranks of `comm`, row-major size x size (collective). Each rank passes
/// its node id (virtual nodes count) and its binding; ranks on one physical host (same
/// processor name) are classified with `topology`, which must describe that host.
std::vector<CommLevel> pair_levels(MPI_Comm comm, const Topology& topology, int node_id, const Bitmap& binding);

/// Disjoint pairs (a < b) at `level`, greedily in rank order: the pairs multi-pair mode runs.
std::vector<std::pair<int, int>> disjoint_pairs(std::span<const CommLevel> levels, int size, CommLevel level);

/// Fills a ping-pong message: a size-dependent byte pattern with round-trip number `trip`
/// stamped in its first 4 bytes (when it has them), so a stale buffer cannot pass the check.
void fill_pingpong_message(std::span<std::uint8_t> message, std::uint32_t trip);
/// True when `message` is exactly what fill_pingpong_message wrote for `trip`.
bool check_pingpong_message(std::span<const std::uint8_t> message, std::uint32_t trip);

/// Options of the probe.
struct PingPongOptions {
  std::size_t max_bytes = std::size_t{4} << 20;  ///< largest message; sizes are 0, 1, 2, 4, ... max
  int iterations = 1000;                          ///< round trips for messages <= 64 KiB (fewer above)
  bool multi = true;                              ///< also run 1, 2, 4, ... pairs at once
  std::size_t multi_bytes = std::size_t{1} << 20;  ///< message size of multi-pair bandwidth
  /// Throws InvalidArgument for iterations < 1, max_bytes > 1 GiB or multi_bytes < 1.
  void validate() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Message sizes probed: 0 and the powers of two up to max_bytes (max_bytes itself included).
std::vector<std::size_t> message_sizes(std::size_t max_bytes);

/// Round trips for one size: `iterations` up to 64 KiB, then scaled down (at least 4).
int round_trips(std::size_t bytes, int iterations);

/// One message size between one pair.
struct PingPongSample {
  std::size_t bytes = 0;
  int round_trips = 0;
  double half_round_trip_s = 0;  ///< one-way time: half the mean round trip
  [[nodiscard]] double bandwidth_mbs() const;  ///< bytes / one-way time, in MB/s (1e6 B/s)
};

/// Hockney model t(s) = alpha + s / beta, least squares in relative error.
struct AlphaBeta {
  double alpha_s = 0;
  double beta_bytes_per_s = 0;  ///< 0 when the fit has no positive slope
};

/// Fits alpha and beta to samples (weights 1/t^2, so small and large sizes count alike).
/// Throws InvalidArgument for fewer than two distinct sizes.
AlphaBeta fit_alpha_beta(std::span<const PingPongSample> samples);

/// Latency and bandwidth of one representative pair at one level.
struct LevelResult {
  CommLevel level = CommLevel::node;
  int rank_a = 0, rank_b = 0;
  int pairs_at_level = 0;  ///< how many rank pairs of the run sit at this level
  std::vector<PingPongSample> samples;
  AlphaBeta fit;
};

/// k pairs of one level ping-ponging at once (seed 001's "number of pairs" table).
struct MultiPairResult {
  CommLevel level = CommLevel::node;
  int pairs = 0;
  double overhead_us = 0;       ///< mean over pairs of the 0-byte one-way time
  double per_pair_min_mbs = 0;  ///< slowest pair's bandwidth at multi_bytes
  double per_pair_max_mbs = 0;
  double aggregate_mbs = 0;     ///< sum over pairs
};

/// Everything the probe measured; `verified` is false if any message arrived corrupted.
struct PingPongResult {
  std::vector<LevelResult> levels;
  std::vector<MultiPairResult> multi;
  bool verified = true;
  double seconds = 0;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Runs the probe over `comm` (collective): one pair per level present, then multi-pair mode.
/// `levels` comes from pair_levels. Every message is checked: the pong side returns what it got,
/// and after each size both sides compare the full buffer with the expected pattern.
PingPongResult run_pingpong(MPI_Comm comm, std::span<const CommLevel> levels, const PingPongOptions& options);

}  // namespace hympi
