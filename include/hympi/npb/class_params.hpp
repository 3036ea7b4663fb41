#pragma once
// What the data file (data/npb-mz/verification.json) says about one NPB-MZ benchmark class: the
// mesh, iterations, time step, reference norms and the Mop/s formula.
#include "hympi/core/enum_names.hpp"
#include "hympi/npb/mops.hpp"
#include "hympi/npb/zone_grid.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <string>

namespace hympi::npb {

/// The three NPB-MZ benchmarks.
enum class Benchmark { bt, sp, lu };
contract::BenchmarkNames<Benchmark> enum_names(Benchmark);
using hympi::to_string;  // "bt-mz", "sp-mz" or "lu-mz"
/// Parses "bt-mz", "sp-mz" or "lu-mz" (also without "-mz"); throws InvalidArgument otherwise.
[[nodiscard]] inline Benchmark parse_benchmark(const std::string& name) { return parse_enum<Benchmark>(name); }

/// Everything the data file says about one benchmark class.
struct ClassParams {
  Benchmark benchmark = Benchmark::sp;
  std::string problem_class;
  ZoneGeometry geometry;
  int niter = 0;
  double dt = 0.0;
  bool has_reference = false;
  /// The data file keeps the class for its geometry only ("geometry_only": E and F): the apps refuse to run it.
  bool geometry_only = false;
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
/// Reads and parses a JSON file; throws InvalidArgument naming the path when it is missing, not a regular file,
/// unreadable or not JSON.
[[nodiscard]] nlohmann::json load_json_file(const std::string& path);
/// Class parameters; throws InvalidArgument naming the class when the file lacks it.
[[nodiscard]] ClassParams load_class_params(const nlohmann::json& data, Benchmark b, const std::string& problem_class);
/// Class parameters from `data_file` (empty: verification_file_path()); throws InvalidArgument naming the path
/// when it cannot be read or is malformed, naming the class when the file lacks it.
[[nodiscard]] ClassParams load_class_params(Benchmark b, const std::string& problem_class,
                                            const std::string& data_file = "");

}  // namespace hympi::npb
