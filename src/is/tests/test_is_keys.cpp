// IS keys: the integer generator equals NPB's double-precision randlc step for step, skipping
// ahead equals stepping, and keys generated in blocks equal the one global sequence.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/is/is.hpp"

namespace {

std::string data_file() { return std::string(HYMPI_TEST_DATA) + "/../../data/npb-is/verification.json"; }

// NPB's randlc as written there (doubles split at 2^23), the reference the port must equal.
double npb_randlc(double& x, double a) {
  const double r23 = 0x1p-23, r46 = 0x1p-46, t23 = 0x1p23, t46 = 0x1p46;
  const double a1 = static_cast<double>(static_cast<long long>(r23 * a)), a2 = a - t23 * a1;
  const double x1 = static_cast<double>(static_cast<long long>(r23 * x)), x2 = x - t23 * x1;
  const double t1 = a1 * x2 + a2 * x1;
  const double z = t1 - t23 * static_cast<double>(static_cast<long long>(r23 * t1));
  const double t3 = t23 * z + a2 * x2;
  x = t3 - t46 * static_cast<double>(static_cast<long long>(r46 * t3));
  return r46 * x;
}

TEST(IsKeys, GeneratorEqualsNpbRandlc) {
  double x = 314159265.0;
  hympi::is::Randlc r(314159265.0, 1220703125.0);
  for (int i = 0; i < 10000; ++i) {
    npb_randlc(x, 1220703125.0);
    ASSERT_EQ(r.next(), static_cast<std::uint64_t>(x)) << "step " << i + 1;
  }
}

TEST(IsKeys, SkipEqualsStepping) {
  hympi::is::Randlc stepped(314159265.0, 1220703125.0), skipped(314159265.0, 1220703125.0);
  for (int n = 0; n < 1000; ++n) stepped.next();
  skipped.skip(1000);
  EXPECT_EQ(skipped.state(), stepped.state());
  EXPECT_THROW(skipped.skip(-1), hympi::InvalidArgument);
  EXPECT_THROW(hympi::is::Randlc(0.5, 3.0), hympi::InvalidArgument);
}

TEST(IsKeys, BlocksOfAnyRankCountEqualTheGlobalSequence) {
  const hympi::is::IsClass c = hympi::is::load_is_class("S", data_file());
  const auto all = hympi::is::generate_keys(c, 0, c.total_keys());
  ASSERT_EQ(static_cast<std::int64_t>(all.size()), c.total_keys());
  EXPECT_TRUE(std::ranges::all_of(all, [&](hympi::is::Key k) { return k >= 0 && k < c.max_key(); }));
  // NPB's first key of class S, from its double formula: (2048 / 4) * (r1 + r2 + r3 + r4).
  double x = c.seed, sum = 0.0;
  for (int i = 0; i < 4; ++i) sum += npb_randlc(x, c.multiplier);
  EXPECT_EQ(all[0], static_cast<hympi::is::Key>(512.0 * sum));
  for (int size : {3, 5}) {
    std::vector<hympi::is::Key> joined;
    for (int r = 0; r < size; ++r) {
      const auto part = hympi::is::generate_keys(c, hympi::is::block_begin(c.total_keys(), r, size),
                                                 hympi::is::block_begin(c.total_keys(), r + 1, size));
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_EQ(joined, all) << size << " ranks";
  }
  EXPECT_THROW((void)hympi::is::generate_keys(c, 0, c.total_keys() + 1), hympi::InvalidArgument);
}

TEST(IsKeys, ClassesAndTheirTestKeys) {
  const hympi::is::IsClass a = hympi::is::load_is_class("A", data_file());
  EXPECT_EQ(a.total_keys(), std::int64_t{1} << 23);
  EXPECT_EQ(a.iterations, 10);
  // NPB class A: test keys 0-2 move by iteration - 1, keys 3-4 by -(iteration - 1).
  EXPECT_EQ(a.test_keys[0].expected_rank(1), 104);
  EXPECT_EQ(a.test_keys[0].expected_rank(10), 113);
  EXPECT_EQ(a.test_keys[3].expected_rank(10), 8288923);
  EXPECT_THROW((void)hympi::is::load_is_class("Q", data_file()), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::is::load_is_class("S", "/nonexistent/verification.json"), hympi::Error);
  nlohmann::json bad = nlohmann::json::parse(R"({"_meta": {"iterations": 10, "seed": 314159265.0,
      "multiplier": 1220703125.0}, "S": {"total_keys_log2": 16, "max_key_log2": 11, "num_buckets_log2": 9,
      "test_keys": [{"index": 1, "rank": 0, "step": 2, "offset": 0}, {"index": 1, "rank": 0, "step": 1, "offset": 0},
      {"index": 1, "rank": 0, "step": 1, "offset": 0}, {"index": 1, "rank": 0, "step": 1, "offset": 0},
      {"index": 1, "rank": 0, "step": 1, "offset": 0}]}})");
  EXPECT_THROW((void)hympi::is::parse_is_class(bad, "S"), hympi::Error);
  bad["S"]["test_keys"][0]["step"] = 1;
  EXPECT_NO_THROW((void)hympi::is::parse_is_class(bad, "S"));
  bad["S"]["total_keys_log2"] = 31;
  EXPECT_THROW((void)hympi::is::parse_is_class(bad, "S"), hympi::Error);
}

}  // namespace
