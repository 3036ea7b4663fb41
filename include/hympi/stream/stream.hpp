#pragma once
// STREAM-style memory bandwidth probe: the bound memory-bound kernels are measured against.
#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <string>

#include "hympi/core/enum_names.hpp"
#include "hympi/core/topology.hpp"

namespace hympi {

class Metrics;

/// The memory level STREAM's arrays are sized for: a cache level (likwid-bench's working sets), or memory.
enum class StreamLevel { l1, l2, l3, memory };

contract::StreamLevelNames<StreamLevel> enum_names(StreamLevel);
/// Parses "l1|l2|l3|memory"; throws InvalidArgument naming the value otherwise.
inline StreamLevel parse_stream_level(const std::string& text) { return parse_enum<StreamLevel>(text); }

/// Options of the bandwidth probe.
struct StreamOptions {
  std::size_t elements = 0;  ///< doubles per array per rank; 0 = sized from the caches
  int repeats = 10;          ///< passes of the four kernels, the first untimed (warms caches and TLBs)
  /// Positive: more passes until the timed triads have lasted this many seconds in all.
  double min_time_s = 0.0;
  /// Repetitions of each kernel inside one timing (stream_inner_for): cache-sized arrays take less time than a
  /// fork and a timer read.
  int inner = 1;
};

/// Aggregate bandwidth of all ranks, in GB/s (1e9 bytes).
struct StreamResult {
  std::size_t elements = 0;
  int inner = 1;  ///< repetitions of each kernel per timing
  /// Best pass of each kernel (STREAM's rule).
  double copy_gbs = 0, scale_gbs = 0, add_gbs = 0, triad_gbs = 0;
  double triad_time_s = 0;       ///< best triad time
  int timed_repeats = 0;         ///< passes timed (all but the first)
  double triad_total_s = 0;      ///< triad time summed over the timed passes (each the slowest rank's)
  double triad_bytes = 0;        ///< triad traffic of the timed passes, all ranks (24 B per element)
  double triad_mean_gbs = 0;     ///< triad_bytes / triad_total_s: the bandwidth of the whole timed region
  double local_triad_s = 0;      ///< this rank's own triad time, summed over the timed passes
  bool verified = false;         ///< final array contents match the recurrences (STREAM's check)
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Bytes per element STREAM counts for a triad a = b + s c: b and c read, a written.
inline constexpr double kTriadCountedBytes = 24.0;
/// Bytes per element a triad moves through memory: a's lines are also read before they are written
/// (write-allocate). run_stream's stores are ordinary ones (no non-temporal stores in its code), as are those of
/// STREAM built without them.
inline constexpr double kTriadMovedBytes = 32.0;

/// `triad_gbs` as STREAM counts it, in bytes as moved: the bound of a kernel whose traffic counts its
/// write-allocates; never fails.
inline double triad_moved_gbs(double triad_gbs) { return triad_gbs * kTriadMovedBytes / kTriadCountedBytes; }

/// Passes of the short triad a kernel's bound is measured with (the first untimed, STREAM's best of the rest).
inline constexpr int kBoundTriadRepeats = 6;

/// Array length so that each array of all `ranks_on_node` ranks together is >= 4x the last-level
/// caches (STREAM's rule, contract.toml [stream]), at least 1 Mi doubles.
std::size_t stream_elements_for(std::size_t last_level_cache_bytes, int ranks_on_node);

/// Bytes per PU of cache level `level` (1..3): its size x count over the machine's `pus`, a thread's share of it.
/// Throws InvalidArgument when `caches` (Topology::caches()) has no such level or pus < 1.
std::uint64_t cache_bytes_per_pu(std::span<const CacheInfo> caches, int pus, StreamLevel level);

/// Array length per rank so that each of a rank's `threads` threads holds contract.toml's cache_fraction of
/// `bytes_per_pu` in its three arrays (at least one element per thread).
std::size_t stream_elements_for_cache(std::uint64_t bytes_per_pu, int threads);

/// Triad bytes per rank one timing of a cache-sized kernel covers at least.
inline constexpr double kStreamInnerBytes = 64.0 * 1024 * 1024;

/// Repetitions of each kernel per timing so that a triad over `elements` doubles per array moves at least
/// kStreamInnerBytes (1 for arrays that large).
int stream_inner_for(std::size_t elements);

/// The scalar of STREAM's scale and triad kernels.
inline constexpr double kStreamScalar = 3.0;
/// Largest relative deviation stream_deviation() may report for a verified run.
inline constexpr double kStreamTolerance = 1e-13;

/// Largest relative deviation of any element of `a`, `b`, `c` from what `passes` passes of copy,
/// scale, add and triad leave in them from a = 1, b = 2, c = 0 (STREAM's check; NaN counts as
/// infinitely far). Throws InvalidArgument when passes < 1 or the arrays differ in length.
double stream_deviation(std::span<const double> a, std::span<const double> b, std::span<const double> c,
                        int passes);

/// Runs copy/scale/add/triad on every rank of `comm` at once (collective).
/// Arrays are first touched by the threads that use them; with `metrics`, their pages are then
/// reported to metrics->observe_memory as "a", "b" and "c" (before the timed passes). Throws
/// InvalidArgument for repeats < 2, elements < 1 or a negative or non-finite min_time_s, and what
/// the metrics' memory probe throws.
StreamResult run_stream(MPI_Comm comm, const StreamOptions& options, Metrics* metrics = nullptr);

/// Triad GB/s of all ranks of `comm` at once, as STREAM counts it: the best of kBoundTriadRepeats - 1 timed passes
/// over `elements` doubles per array and rank (stream_inner_for repetitions per timing), freed on return. The bound
/// of a kernel that streams from the level these arrays fit, on the caller's ranks, threads and binding.
/// Collective; throws as run_stream.
double measure_triad_gbs(MPI_Comm comm, std::size_t elements);

}  // namespace hympi
