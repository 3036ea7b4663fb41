#pragma once
// The one line every app ends with: HYMPI_RESULT {json}.
#include <nlohmann/json.hpp>
#include <string>

namespace hympi {

/// What an app measured; run_app adds layout, binding, timing breakdown and memory.
struct ResultRecord {
  std::string app;
  std::string problem;      ///< e.g. "128x128x128" or "class W"
  double time_s = 0;        ///< wall time of the measured phase
  double rate = 0;          ///< throughput in rate_unit
  std::string rate_unit;    ///< e.g. "GFLOP/s", "GB/s", "Mop/s"
  bool verified = false;    ///< the app's own verification passed
  nlohmann::json metrics = nlohmann::json::object();  ///< app-specific values, with units in the key
  /// The app-level fields as JSON.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Prefix of the result line the Python side parses.
inline constexpr const char* kResultPrefix = "HYMPI_RESULT ";

/// "HYMPI_RESULT " + compact JSON, without a newline.
std::string format_result_line(const nlohmann::json& record);

/// Current UTC time in ISO 8601 ("2026-11-21T12:00:00Z").
std::string utc_timestamp();

}  // namespace hympi
