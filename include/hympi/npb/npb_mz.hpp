#pragma once
// The NPB-MZ driver: class parameters and reference values from the data file, the time-step
// loop over the zones of this rank with the boundary exchange between steps, the reference
// verification rule, Mop/s by the reference formulas, and the NPB-style report.
#include "hympi/npb/zone_layout.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <mpi.h>
#include <nlohmann/json.hpp>

#include <array>
#include <ostream>
#include <string>

namespace hympi::npb {

/// The three NPB-MZ benchmarks.
enum class Benchmark { bt, sp, lu };
}  // namespace hympi::npb

namespace hympi {
template <>
struct EnumNames<npb::Benchmark> : contract::BenchmarkNames<npb::Benchmark> {};
}  // namespace hympi

namespace hympi::npb {
using hympi::to_string;  // "bt-mz", "sp-mz" or "lu-mz"
/// Parses "bt-mz", "sp-mz" or "lu-mz" (also without "-mz"); throws InvalidArgument otherwise.
[[nodiscard]] inline Benchmark parse_benchmark(const std::string& name) { return parse_enum<Benchmark>(name); }

/// Mop/s coefficients per zone and iteration: a*n3 + b*nsur + c*navg + d.
struct MopsFormula {
  double n3 = 0.0, nsur = 0.0, navg = 0.0, constant = 0.0;
  /// NPB BT/SP divide by a single-precision 3.0 when averaging; LU uses double.
  bool single_precision_average = false;
  /// Parses "3478.8*n3 - 17655.7*nsur + 28023.7*navg"; throws InvalidArgument on other text.
  [[nodiscard]] static MopsFormula parse(const std::string& text, bool single_precision_average);
};

/// Everything the data file says about one benchmark class.
struct ClassParams {
  Benchmark benchmark = Benchmark::sp;
  std::string problem_class;
  ZoneGeometry geometry;
  int niter = 0;
  double dt = 0.0;
  bool has_reference = false;
  int niter_ref = 0;
  double dt_ref = 0.0;
  double epsilon = 1e-8;
  std::array<double, 5> xcr_ref{};
  std::array<double, 5> xce_ref{};
  double xci_ref = 0.0;  ///< LU only
  MopsFormula mops;
  /// Parameters as JSON, for result records.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Path of the verification file: $HYMPI_DATA_DIR/npb-mz/verification.json, else the build's data dir.
[[nodiscard]] std::string verification_file_path();
/// Reads and parses a JSON file; throws Error naming the path when it cannot.
[[nodiscard]] nlohmann::json load_json_file(const std::string& path);
/// Class parameters; throws InvalidArgument naming the class when the file lacks it.
[[nodiscard]] ClassParams load_class_params(const nlohmann::json& data, Benchmark b, const std::string& problem_class);

/// Outcome of the reference verification rule.
struct Verification {
  bool passed = false;
  bool reference_available = false;
  bool dt_ok = false;
  bool niter_ok = false;
  std::array<double, 5> xcr{}, xce{}, xcr_diff{}, xce_diff{};
  double xci = 0.0, xci_diff = 0.0;
  /// The verify.f style block: references, values, relative differences, FAILURE marks.
  void print(std::ostream& os, const ClassParams& p) const;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Applies the reference rule: dt and iterations match, every relative difference <= epsilon, no NaN.
[[nodiscard]] Verification verify(const ClassParams& p, int niter, double dt, const std::array<double, 5>& xcr,
                                  const std::array<double, 5>& xce, double xci);

/// Reference Mop/s for `niter` iterations over all zones of `layout` in `seconds`.
[[nodiscard]] double mops_total(const ClassParams& p, const ZoneLayout& layout, int niter, double seconds);

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
[[nodiscard]] MzResult run_mz(const ClassParams& p, const ZoneLayout& layout, const ZonePartition& partition,
                              MPI_Comm comm, const MzOptions& options, std::ostream* log);

/// The NPB-style header printed before the run (benchmark, zones, mesh, iterations, dt, ranks).
void print_header(std::ostream& os, const ClassParams& p, int niter, int nranks, int total_threads);
/// The NPB-style result block (class, size, iterations, time, Mop/s total and per process, verification).
void print_report(std::ostream& os, const ClassParams& p, const MzResult& r, int nranks, int total_threads);

}  // namespace hympi::npb
