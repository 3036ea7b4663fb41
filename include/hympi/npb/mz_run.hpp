#pragma once
// The NPB-MZ time loop: the zones of this rank stepped together, with the boundary exchange
// between steps, the verification norms reduced over ranks at the end; and the benchmark
// repeated whole until a minimum time is reached.
#include "hympi/npb/class_params.hpp"
#include "hympi/npb/verification.hpp"
#include "hympi/npb/zone_grid.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <ostream>
#include <vector>

namespace hympi::npb {

/// Run options of the driver.
struct MzOptions {
  int niter = 0;          ///< 0: the class's iteration count
  double perturb = 0.0;   ///< added to one interior value of rank 0's first zone after the timed loop
  bool progress = true;   ///< rank 0 prints " Time step N" lines like the reference
  /// Options as JSON.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// What one run produced (identical on every rank).
struct MzResult {
  int niter = 0;
  double seconds = 0.0;      ///< max over ranks of the timed loop
  double mops = 0.0;         ///< total
  double exchange_seconds = 0.0;  ///< max over ranks of the time spent in the boundary exchange
  double local_seconds = 0.0;           ///< this rank's timed loop
  double local_exchange_seconds = 0.0;  ///< this rank's time in the boundary exchange
  Verification verification;
};

/// Runs the benchmark on `comm` (one rank per partition rank); sets this rank's OpenMP thread
/// count to partition.threads(rank).
/// Throws InvalidArgument when the communicator size does not match the partition.
[[nodiscard]] MzResult run_mz(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition,
                              MPI_Comm comm, const MzOptions& options, std::ostream* log);

/// The benchmark repeated whole (initialise, time the loop, verify) until the timed loops sum to
/// a minimum time: the class fixes the iterations, which verification needs.
struct MzSeries {
  std::vector<MzResult> runs;  ///< every repetition, in order
  /// The last repetition's iterations and verification, with seconds, exchange_seconds and mops
  /// over all repetitions (mops = all operations / all seconds).
  MzResult total;
  bool all_verified = false;   ///< every repetition verified
  /// Each repetition's seconds (the slowest rank's).
  [[nodiscard]] std::vector<double> repetition_seconds() const;
};

/// Calls run_mz until the runs' seconds reach `min_time_s` (at least once) or one fails
/// verification; only the first run prints progress. Every rank takes the same decision (the
/// seconds are the slowest rank's). Throws what run_mz throws.
[[nodiscard]] MzSeries run_mz_series(const ClassParams& p, const ZoneGrid& grid, const ZonePartition& partition,
                                     MPI_Comm comm, MzOptions options, double min_time_s, std::ostream* log);

}  // namespace hympi::npb
