#include "hympi/core/result.hpp"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "hympi/contract.hpp"
#include "hympi/core/enum_names.hpp"
#include "hympi/core/error.hpp"

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
    const double kernel_gbs = time_s > 0 ? *bytes_moved / time_s * 1e-9 : 0.0;
    out["bytes_moved"] = *bytes_moved;
    out["kernel_gbs"] = kernel_gbs;
    if (bound) {
      out["triad_gbs"] = bound->triad_gbs;
      out["triad_source"] = to_string(bound->source);
      out["bound_gbs"] = bound->bound_gbs;
      out["bound_fraction"] = bound->bound_gbs > 0 ? kernel_gbs / bound->bound_gbs : 0.0;
    }
  }
  if (working_set_bytes) out["working_set_bytes"] = *working_set_bytes;
  if (stream_level) out["stream_level"] = *stream_level;
  if (cache_bytes_per_pu) out["cache_bytes_per_pu"] = *cache_bytes_per_pu;
  return out;
}

namespace {

bool has_type(const nlohmann::json& value, contract::FieldType type) {
  switch (type) {
    case contract::FieldType::string: return value.is_string();
    case contract::FieldType::number: return value.is_number();
    case contract::FieldType::integer: return value.is_number_integer();
    case contract::FieldType::boolean: return value.is_boolean();
    case contract::FieldType::object: return value.is_object();
    case contract::FieldType::array: return value.is_array();
    case contract::FieldType::enumeration: return value.is_string();
  }
  return false;
}

bool names_enum_value(const nlohmann::json& value, std::string_view enum_name) {
  const contract::EnumInfo* declared = declared_enum(enum_name);
  return declared != nullptr && std::ranges::find(declared->texts, value.get<std::string>()) != declared->texts.end();
}

}  // namespace

void check_result_fields(const nlohmann::json& record) {
  if (!record.is_object()) throw Error("HYMPI_RESULT must be a JSON object, got " + record.dump());
  for (const auto& [key, value] : record.items()) {
    const contract::FieldInfo* field = nullptr;
    for (const auto& f : contract::kResultFields)
      if (f.name == key) field = &f;
    if (field == nullptr) throw Error("HYMPI_RESULT field '" + key + "' is not declared in contract.toml");
    if (!has_type(value, field->type) ||
        (field->type == contract::FieldType::enumeration && !names_enum_value(value, field->enum_name)))
      throw Error("HYMPI_RESULT field '" + key + "' has a value of the wrong type: " + value.dump());
  }
  for (const auto& f : contract::kResultFields)
    if (f.required && !record.contains(std::string(f.name)))
      throw Error("HYMPI_RESULT lacks required field '" + std::string(f.name) + "'");
}

std::string format_result_line(const nlohmann::json& record) {
  check_result_fields(record);
  return kResultPrefix + record.dump();
}

std::string utc_timestamp() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace hympi
