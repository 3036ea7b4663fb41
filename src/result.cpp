#include "hympi/result.hpp"

#include <chrono>
#include <ctime>

namespace hympi {

nlohmann::json ResultRecord::to_json() const {
  return {{"app", app},       {"problem", problem},     {"time_s", time_s},   {"rate", rate},
          {"rate_unit", rate_unit}, {"verified", verified}, {"metrics", metrics}};
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
