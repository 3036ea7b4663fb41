#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

#include "hympi/core/numbers.hpp"

namespace {

/// The cases hympi's Python side is held to too (tests/python/test_numbers.py): one table, two readers.
nlohmann::json cases() {
  std::ifstream in(std::string(HYMPI_TEST_DATA) + "/numbers.json");
  return nlohmann::json::parse(in);
}

double expected_real(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  const auto name = value.get<std::string>();
  if (name == "inf") return INFINITY;
  if (name == "-inf") return -INFINITY;
  return NAN;
}

}  // namespace

TEST(AsciiNumbers, IntegersAsThePythonSideReadsThem) {
  const auto table = cases().at("integers");
  ASSERT_FALSE(table.at("accepted").empty());
  for (const auto& item : table.at("accepted")) {
    const auto text = item.at(0).get<std::string>();
    EXPECT_EQ(hympi::ascii_integer(text), item.at(1).get<long long>()) << "'" << text << "'";
  }
  for (const auto& item : table.at("refused"))
    EXPECT_FALSE(hympi::ascii_integer(item.get<std::string>()).has_value()) << "'" << item.get<std::string>() << "'";
}

TEST(AsciiNumbers, RealsAsThePythonSideReadsThem) {
  const auto table = cases().at("reals");
  ASSERT_FALSE(table.at("accepted").empty());
  for (const auto& item : table.at("accepted")) {
    const auto text = item.at(0).get<std::string>();
    const auto read = hympi::ascii_number(text);
    ASSERT_TRUE(read.has_value()) << "'" << text << "'";
    const double expected = expected_real(item.at(1));
    if (std::isnan(expected))
      EXPECT_TRUE(std::isnan(*read)) << "'" << text << "'";
    else
      EXPECT_EQ(*read, expected) << "'" << text << "'";
  }
  for (const auto& item : table.at("refused"))
    EXPECT_FALSE(hympi::ascii_number(item.get<std::string>()).has_value()) << "'" << item.get<std::string>() << "'";
}

TEST(AsciiNumbers, AnIntegerBeyondLongLongIsRefusedNotClamped) {
  EXPECT_FALSE(hympi::ascii_integer("99999999999999999999").has_value());
  EXPECT_EQ(hympi::ascii_integer("-9223372036854775808"), std::numeric_limits<long long>::min());
}
