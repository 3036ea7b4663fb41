#include "hympi/core/result.hpp"

#include <chrono>
#include <ctime>

namespace hympi {

nlohmann::json ResultRecord::to_json() const {
  nlohmann::json out = {{"app", app},       {"problem", problem},     {"time_s", time_s},   {"rate", rate},
                        {"rate_unit", rate_unit}, {"verified", verified}, {"metrics", metrics}};
  if (timed_repetitions > 0) {
    out["timed_repetitions"] = timed_repetitions;
    out["repetitions_fixed"] = repetitions_fixed;
    out["min_time_s"] = min_time_s;
  }
  if (bytes_moved) {
    out["bytes_moved"] = *bytes_moved;
    out["kernel_gbs"] = time_s > 0 ? *bytes_moved / time_s * 1e-9 : 0.0;
  }
  return out;
}

std::string format_result_line(const nlohmann::json& record) { return kResultPrefix + record.dump(); }

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace hympi
