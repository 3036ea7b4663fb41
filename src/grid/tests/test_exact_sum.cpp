#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "hympi/grid/exact_sum.hpp"

using hympi::ExactSum;

TEST(ExactSum, IsExactWhereNaiveSummationIsNot) {
  ExactSum s;
  for (double x : {1e100, 1.0, -1e100, 1e-100}) s.add(x);
  EXPECT_EQ(s.value(), 1.0 + 1e-100);  // the double nearest to the exact sum is 1.0
  double naive = 0;
  for (double x : {1e100, 1.0, -1e100}) naive += x;
  EXPECT_EQ(naive, 0.0);
  ExactSum t;
  t.add(0.1);
  t.add(0.2);
  t.add(-0.3);
  // The three doubles do not cancel exactly; 64-bit long double holds their sum exactly.
  const long double exact = (static_cast<long double>(0.1) + static_cast<long double>(0.2)) - static_cast<long double>(0.3);
  EXPECT_EQ(t.value(), static_cast<double>(exact));
  EXPECT_NE(t.value(), 0.0);
}

TEST(ExactSum, OrderAndPartitionDoNotChangeTheBits) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> mag(-30, 30);
  std::vector<double> v(20000);
  for (auto& x : v) x = std::ldexp(std::uniform_real_distribution<double>(-1, 1)(rng), static_cast<int>(mag(rng)));
  ExactSum forward;
  for (double x : v) forward.add(x);
  std::shuffle(v.begin(), v.end(), rng);
  ExactSum a, b, c;
  for (std::size_t i = 0; i < v.size(); ++i) (i % 3 == 0 ? a : i % 3 == 1 ? b : c).add(v[i]);
  b.merge(c);
  a.merge(b);
  EXPECT_EQ(a.value(), forward.value());
  const double naive_fwd = std::accumulate(v.begin(), v.end(), 0.0);
  std::reverse(v.begin(), v.end());
  const double naive_rev = std::accumulate(v.begin(), v.end(), 0.0);
  // The point of the class: plain summation depends on order for this data.
  EXPECT_NE(naive_fwd, naive_rev);
}

TEST(ExactSum, SubnormalsNegativesAndPoison) {
  ExactSum s;
  const double tiny = std::numeric_limits<double>::denorm_min();
  for (int i = 0; i < 1000; ++i) s.add(tiny);
  EXPECT_EQ(s.value(), 1000 * tiny);
  ExactSum n;
  n.add(-2.5);
  n.add(1.25);
  EXPECT_EQ(n.value(), -1.25);
  n.add(std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(n.value()));
  EXPECT_EQ(ExactSum().value(), 0.0);
}
