#include "hympi/core/numbers.hpp"

#include <charconv>
#include <cstdlib>
#include <string>
#include <system_error>

namespace hympi {

namespace {

/// `text` without one leading '+', which std::from_chars does not take and the Python side does.
std::string_view without_plus(std::string_view text) noexcept {
  return text.size() > 1 && text.front() == '+' && text[1] != '-' ? text.substr(1) : text;
}

}  // namespace

std::optional<long long> ascii_integer(std::string_view text) noexcept {
  text = without_plus(text);
  long long value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::optional<double> ascii_number(std::string_view text) {
  text = without_plus(text);
  // from_chars takes "nan(...)" too; the Python side spells nan only as "nan".
  if (text.find('(') != std::string_view::npos) return std::nullopt;
  double value = 0.0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value,
                                            std::chars_format::general);
  if (text.empty() || end != text.data() + text.size()) return std::nullopt;
  // A number beyond double's range reads as Python's float() reads it (1e999: inf, 1e-999: 0), for the caller's range
  // check to name it; the text is already known to be a number, so strtod's leniencies do not matter here.
  if (error == std::errc::result_out_of_range) return std::strtod(std::string(text).c_str(), nullptr);
  if (error != std::errc()) return std::nullopt;
  return value;
}

}  // namespace hympi
