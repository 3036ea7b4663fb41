#include "hympi/core/enum_names.hpp"

namespace hympi {

const contract::EnumInfo* declared_enum(std::string_view enum_name) {
  for (const auto& e : contract::kEnums)
    if (e.name == enum_name) return &e;
  return nullptr;
}

std::string unknown_name(std::string_view what, std::span<const std::string_view> names, std::string_view text) {
  std::string expected;
  for (std::size_t i = 0; i < names.size(); ++i)
    expected += std::string(i == 0 ? "" : (i + 1 == names.size() ? " or " : ", ")) + std::string(names[i]);
  return "unknown " + std::string(what) + " '" + std::string(text) + "' (expected " + expected + ")";
}

}  // namespace hympi
