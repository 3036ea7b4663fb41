#pragma once
// The one line every app ends with: HYMPI_RESULT {json}.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "hympi/core/enum_names.hpp"

namespace hympi {

/// Where the STREAM triad a kernel's bandwidth is measured against came from.
enum class TriadSource { measured, given };

contract::TriadSourceNames<TriadSource> enum_names(TriadSource);

/// The memory bandwidth a kernel with a traffic model is measured against.
struct BandwidthBound {
  double triad_gbs = 0;  ///< STREAM triad GB/s of all ranks as STREAM counts it (24 B per element)
  /// The same triad in bytes as moved (its write-allocate too), the way bytes_moved counts a kernel's traffic.
  double bound_gbs = 0;
  TriadSource source = TriadSource::measured;
};

/// What an app measured; run_app adds layout, binding, timing breakdown and memory.
struct ResultRecord {
  std::string app;
  std::string problem;      ///< e.g. "128x128x128" or "class W"
  double time_s = 0;        ///< wall time of the measured phase
  double rate = 0;          ///< throughput in rate_unit
  std::string rate_unit;    ///< e.g. "GFLOP/s", "GB/s", "Mop/s"
  bool verified = false;    ///< the app's own verification passed
  nlohmann::json metrics = nlohmann::json::object();  ///< app-specific values, with units in the key
  // How long the timed region ran, for apps that repeat their kernel to reach --min-time; the app counts the
  // repetitions, the app frame (run_app) sets the other two.
  int timed_repetitions = 0;       ///< iterations/repeats in the timed region (0: not reported)
  bool repetitions_fixed = false;  ///< the user fixed the count, so min_time_s did not scale it
  double min_time_s = 0;           ///< the minimum kernel time asked for (0: none)
  /// Modelled memory traffic of the timed region summed over ranks (absent: no model).
  std::optional<double> bytes_moved;
  /// Bytes of the arrays the timed kernel sweeps on one rank, the largest (absent: not reported).
  std::optional<double> working_set_bytes;
  /// STREAM only: the level its arrays were sized for, and that cache level's bytes per PU.
  std::optional<std::string> stream_level;
  std::optional<double> cache_bytes_per_pu;
  /// The bandwidth kernel_gbs is bounded by (absent: the app measures none; needs bytes_moved).
  std::optional<BandwidthBound> bound;
  /// The app-level fields as JSON; the repetition fields only when timed_repetitions > 0,
  /// bytes_moved with kernel_gbs = bytes_moved / time_s / 1e9 only when a traffic model is set, and with it
  /// the bound's fields and bound_fraction = kernel_gbs / bound_gbs when a bound is set.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Prefix of the result line the Python side parses.
inline constexpr const char* kResultPrefix = "HYMPI_RESULT ";

/// Checks `record` against contract.toml's [result] fields: every field declared, of its type (an enum
/// field one of the enum's names), every required field present. Throws Error naming the first bad field.
void check_result_fields(const nlohmann::json& record);

/// "HYMPI_RESULT " + compact JSON, without a newline; throws Error (check_result_fields) for a record
/// the contract does not declare, so an undeclared field fails every app test instead of reaching Python.
std::string format_result_line(const nlohmann::json& record);

/// Current UTC time in ISO 8601 ("2026-11-21T12:00:00Z").
std::string utc_timestamp();

}  // namespace hympi
