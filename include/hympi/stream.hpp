#pragma once
// STREAM-style memory bandwidth probe: the bound memory-bound kernels are measured against.
#include <mpi.h>

#include <cstddef>
#include <nlohmann/json.hpp>

namespace hympi {

/// Options of the bandwidth probe.
struct StreamOptions {
  std::size_t elements = 0;  ///< doubles per array per rank; 0 = sized from the caches
  int repeats = 10;          ///< timed repetitions; the best one counts (STREAM rule)
};

/// Aggregate bandwidth of all ranks, in GB/s (1e9 bytes), best of the repetitions.
struct StreamResult {
  std::size_t elements = 0;
  double copy_gbs = 0, scale_gbs = 0, add_gbs = 0, triad_gbs = 0;
  double triad_time_s = 0;  ///< best triad time
  bool verified = false;    ///< final array contents match the recurrences (STREAM's check)
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Array length so that the three arrays of all `ranks_on_node` ranks are >= 4x the
/// last-level caches (STREAM's rule), at least 1 Mi doubles.
std::size_t stream_elements_for(std::size_t last_level_cache_bytes, int ranks_on_node);

/// Runs copy/scale/add/triad on every rank of `comm` at once (collective).
/// Arrays are first touched by the threads that use them. Throws InvalidArgument for
/// repeats < 2 or elements < 1.
StreamResult run_stream(MPI_Comm comm, const StreamOptions& options);

}  // namespace hympi
