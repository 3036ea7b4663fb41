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

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"

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

contract::CommLevelNames<CommLevel> enum_names(CommLevel);
/// Parses a level name; throws InvalidArgument naming the value otherwise.
inline CommLevel parse_comm_level(const std::string& text) { return parse_enum<CommLevel>(text); }

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
/// Cannot fail.
void fill_pingpong_message(std::span<std::uint8_t> message, std::uint32_t trip);
/// True when `message` is exactly what fill_pingpong_message wrote for `trip`; false, never a
/// throw, for anything else.
bool check_pingpong_message(std::span<const std::uint8_t> message, std::uint32_t trip);

/// MPI tag of every probe message.
inline constexpr int kPingPongTag = 7411;
/// Round trips of the untimed validation pass per size: more than one, so a message left over
/// from the trip before (a stale buffer) is told apart by its trip number.
inline constexpr std::uint32_t kPingPongCheckedTrips = 3;

/// The untimed validation pass of one pair at `bytes` (called by ranks `a` and `b` of `comm`
/// only): kPingPongCheckedTrips round trips of fill_pingpong_message(trip) messages, `a` sending
/// first; each side checks every message it receives. Returns false on a corrupted, stale or
/// missing message, true otherwise (and on ranks other than a and b). Throws MpiError when an
/// MPI call fails, std::bad_alloc when the buffers do not fit.
bool validate_pingpong_pair(MPI_Comm comm, int a, int b, std::size_t bytes);

/// Options of the probe. The counts follow osu_latency: up to 8 KiB `iterations` round trips
/// after 100 warm-up ones, above 8 KiB `large_iterations` after 10 warm-up ones.
struct PingPongOptions {
  std::size_t max_bytes = std::size_t{4} << 20;  ///< largest message; sizes are 0, 1, 2, 4, ... max
  int iterations = 1000;                          ///< round trips for messages <= 8 KiB
  int large_iterations = 0;                       ///< round trips above 8 KiB; 0: iterations / 10 (at least 4)
  bool multi = true;                              ///< also run 1, 2, 4, ... pairs at once
  std::size_t multi_bytes = std::size_t{1} << 20;  ///< message size of multi-pair bandwidth
  /// Throws InvalidArgument for iterations < 1, large_iterations < 0, or max_bytes or
  /// multi_bytes outside 1 B .. 1 GiB.
  void validate() const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Message sizes probed: 0 and the powers of two up to max_bytes (max_bytes itself included).
/// Cannot fail.
std::vector<std::size_t> message_sizes(std::size_t max_bytes);

/// Timed round trips for one size: `iterations` up to 8 KiB, above it `large_iterations`, or
/// when that is 0, iterations / 10 (osu_latency's ratio, at least 4). Cannot fail.
int round_trips(std::size_t bytes, int iterations, int large_iterations = 0);
/// Untimed warm-up round trips before one size: 100 up to 8 KiB, 10 above (as osu_latency).
/// Cannot fail.
int warmup_trips(std::size_t bytes);

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

/// k pairs of one level ping-ponging at once (the "Number of pairs" tables of Chow, "How to use hybrid MPI-OpenMP on
/// IBM SP systems": overhead and bandwidth per pair and aggregate).
struct MultiPairResult {
  CommLevel level = CommLevel::node;
  int pairs = 0;
  double overhead_us = 0;       ///< mean over pairs of the 0-byte one-way time
  double per_pair_min_mbs = 0;  ///< slowest pair's bandwidth at multi_bytes
  double per_pair_max_mbs = 0;
  double aggregate_mbs = 0;     ///< sum over pairs
};

/// Everything the probe measured; `verified` is false if any message of a validation pass arrived
/// corrupted, stale or not at all.
struct PingPongResult {
  std::vector<LevelResult> levels;
  std::vector<MultiPairResult> multi;
  bool verified = true;
  double seconds = 0;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Runs the probe over `comm` (collective): one pair per level present, then multi-pair mode.
/// `levels` comes from pair_levels. Each size is timed as osu_latency times it: warm-up round
/// trips, then one clock read before and one after a batch of round trips with nothing else in
/// the loop. Contents are checked in an untimed validation pass per size (as OSU's -c): a few
/// round trips of trip-numbered patterns, every message of which both sides check, so a
/// corrupted, stale or missing message makes `verified` false. The two message buffers of a rank are
/// allocated and touched once, at the largest size, and reused for every size. Throws
/// InvalidArgument for bad options or a level matrix of the wrong size, MpiError when an MPI
/// call fails, std::bad_alloc when the buffers do not fit.
PingPongResult run_pingpong(MPI_Comm comm, std::span<const CommLevel> levels, const PingPongOptions& options);

}  // namespace hympi
