#include <gtest/gtest.h>
#include <mpi.h>

#include "hympi/core/error.hpp"
#include "hympi/rb3d/rb3d.hpp"

using namespace hympi;

TEST(Rb3d, ResidualHistoryEqualsOneRankBitForBit) {
  for (long n : {12L, 13L}) {  // 13: uneven blocks
    Rb3dOptions o;
    o.global = {n, n, n};
    o.iterations = 12;
    o.residual_every = 3;
    Metrics m, scratch;
    const auto layout = solve_rb3d(MPI_COMM_WORLD, o, m);
    const auto single = solve_rb3d(MPI_COMM_SELF, o, scratch);
    ASSERT_EQ(layout.residuals.size(), 5u);
    for (std::size_t i = 0; i < single.residuals.size(); ++i)
      EXPECT_EQ(layout.residuals[i], single.residuals[i]) << "n=" << n << " residual " << i;
    EXPECT_GT(m.seconds("sweep"), 0.0);
  }
}

TEST(Rb3d, MinTimeExtendsTheLoopAndAFixedCountReproducesIt) {
  Rb3dOptions o;
  o.global = {12, 12, 12};
  o.iterations = 7;  // not a multiple of residual_every: the chunk's end must not add a residual
  o.residual_every = 3;
  Metrics first;
  // Relative to what the first chunk takes here: the test machine may be loaded.
  o.min_time_s = 4.0 * solve_rb3d(MPI_COMM_WORLD, o, first).time_s + 0.02;
  Metrics m;
  const auto timed = solve_rb3d(MPI_COMM_WORLD, o, m);
  EXPECT_GE(timed.time_s, o.min_time_s);
  EXPECT_GT(timed.iterations, o.iterations);
  // Residuals at every third iteration, after the last one, and the initial one.
  const std::size_t expected = 1 + static_cast<std::size_t>(timed.iterations / 3) + (timed.iterations % 3 != 0 ? 1u : 0u);
  EXPECT_EQ(timed.residuals.size(), expected);
  // Every rank agreed on the count, so a fixed-count solve on one rank gives the same history.
  auto fixed = o;
  fixed.iterations = timed.iterations;
  fixed.min_time_s = 0.0;
  Metrics scratch;
  const auto single = solve_rb3d(MPI_COMM_SELF, fixed, scratch);
  EXPECT_EQ(single.iterations, timed.iterations);
  EXPECT_EQ(single.residuals, timed.residuals);
  // The phases are the loop's only: they fit into its time (bulk, no overlap).
  const double phases = m.total(PhaseKind::computation) + m.total(PhaseKind::communication);
  EXPECT_LE(phases, timed.time_s);
  EXPECT_DOUBLE_EQ(timed.bytes, kRb3dBytesPerPoint * 12 * 12 * 12 * timed.iterations);
}

TEST(Rb3d, ManufacturedSolutionConvergesAtSecondOrder) {
  double errors[2];
  const long sizes[2] = {15, 31};
  for (int s = 0; s < 2; ++s) {
    Rb3dOptions o;
    o.global = {sizes[s], sizes[s], sizes[s]};
    const double h = 1.0 / static_cast<double>(sizes[s] + 1);
    o.omega = 2.0 / (1.0 + std::sin(3.141592653589793 * h));  // optimal SOR factor
    o.iterations = 1000;
    o.residual_every = 5;
    o.tolerance = 1e-11;
    Metrics m;
    const auto r = solve_rb3d(MPI_COMM_WORLD, o, m);
    ASSERT_LT(r.iterations, 1000) << "SOR did not converge";
    EXPECT_NEAR(r.max_error, r.discretisation_error, 0.01 * r.discretisation_error);
    errors[s] = r.max_error;
  }
  const double order = std::log2(errors[0] / errors[1]);
  EXPECT_NEAR(order, 2.0, 0.05);
}

TEST(Rb3d, OptionsAreValidated) {
  Rb3dOptions o;
  o.global = {8, 8, 8};
  EXPECT_NO_THROW(o.validate(4));
  EXPECT_THROW(o.validate(513), InvalidArgument);
  o.global = {8, 8, 9};
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.global = {0, 0, 0};
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.global = {8, 8, 8};
  o.omega = 2.0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.omega = 1.0;
  o.iterations = 0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
  o.iterations = 1;
  o.min_time_s = -1.0;
  EXPECT_THROW(o.validate(1), InvalidArgument);
}
