// Every overlap strategy, with and without tiles, computes every point from current ghosts,
// exactly once, at every rank count; rb3d's residuals do not depend on the strategy.
#include <gtest/gtest.h>
#include <mpi.h>
#include <omp.h>

#include <atomic>
#include <optional>

#include "hympi/grid/cart.hpp"
#include "hympi/core/error.hpp"
#include "hympi/grid/overlap.hpp"
#include "hympi/rb3d/rb3d.hpp"
#include "omp_threads.hpp"

using namespace hympi;

namespace {

using hympi::test::Threads;

struct Case {
  std::array<long, 3> global;
  std::array<bool, 3> periodic;
  int ghost;
  HaloPattern pattern;
};

/// Value of the source field at a global index; 0 past a non-periodic wall.
double source(const Case& c, std::array<long, 3> g) {
  for (int d = 0; d < 3; ++d) {
    if (g[d] < 0 || g[d] >= c.global[d]) {
      if (!c.periodic[d]) return 0.0;
      g[d] = (g[d] + c.global[d]) % c.global[d];
    }
  }
  return static_cast<double>(1 + g[0] + 50 * g[1] + 2500 * g[2]);
}

/// Distinct weights per offset, so a ghost taken from the wrong place changes the sum.
double weight(int dx, int dy, int dz) { return 1.0 + (dx + 2) + 5 * (dy + 2) + 25 * (dz + 2); }

bool in_pattern(const Case& c, int dx, int dy, int dz) {
  const int nonzero = (dx != 0) + (dy != 0) + (dz != 0);
  return c.pattern == HaloPattern::full || nonzero <= 1;
}

/// Applies the weighted stencil of reach = ghost width through the driver; the kernel adds to
/// y, so a point computed twice or never is caught, and checks every point exactly.
void check_strategy(const Case& c, const OverlapOptions& options, UntiledRows rows) {
  CartDecomposition cart(MPI_COMM_WORLD, {c.global, c.periodic, {0, 0, 0}});
  Grid3D<double> x(cart.local_box(), c.ghost), y(cart.local_box(), c.ghost);
  const auto n = x.extent();
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) x(i, j, k) = source(c, {x.global(0, i), x.global(1, j), x.global(2, k)});
  OverlapDriver driver(cart, x, c.pattern, c.ghost, options, rows);
  const int r = c.ghost;
  const auto kernel = [&](const Box3& b) {
    for (long k = b.low[2]; k < b.high[2]; ++k)
      for (long j = b.low[1]; j < b.high[1]; ++j)
        for (long i = b.low[0]; i < b.high[0]; ++i) {
          double acc = 0;
          for (int dz = -r; dz <= r; ++dz)
            for (int dy = -r; dy <= r; ++dy)
              for (int dx = -r; dx <= r; ++dx)
                if (in_pattern(c, dx, dy, dz)) acc += weight(dx, dy, dz) * x(i + dx, j + dy, k + dz);
          y(i, j, k) += acc;
        }
  };
  // Twice: persistent requests must restart cleanly, and the sums double.
  for (int pass = 1; pass <= 2; ++pass) {
    const auto times = driver.apply(x, kernel);
    // comm and comp are parts of the sweep: disjoint intervals under bulk and split, each inside
    // it under comm_thread.
    EXPECT_GT(times.wall_s, 0.0);
    EXPECT_GT(times.comp_s, 0.0);
    EXPECT_GE(times.comm_s, 0.0);
    EXPECT_LE(times.comm_s, times.wall_s);
    EXPECT_LE(times.comp_s, times.wall_s);
    if (options.strategy != OverlapStrategy::comm_thread) {
      EXPECT_NEAR(times.comm_s + times.comp_s, times.wall_s, 1e-9 * times.wall_s + 1e-12);
    }
    long wrong = 0;
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          double expected = 0;
          for (int dz = -r; dz <= r; ++dz)
            for (int dy = -r; dy <= r; ++dy)
              for (int dx = -r; dx <= r; ++dx)
                if (in_pattern(c, dx, dy, dz))
                  expected += weight(dx, dy, dz) *
                              source(c, {x.global(0, i) + dx, x.global(1, j) + dy, x.global(2, k) + dz});
          if (y(i, j, k) != pass * expected) ++wrong;
        }
    EXPECT_EQ(wrong, 0) << to_string(options.strategy) << " pass " << pass << " on rank " << cart.rank();
  }
}

/// comm_thread always runs with 2 threads; bulk and split with `loop_threads` (threads make
/// every MPI test slow on an oversubscribed machine, so only some cases pay for them).
void check_all_strategies(const Case& c, int loop_threads) {
  using Tile = std::optional<std::array<long, 3>>;
  for (auto s : {OverlapStrategy::bulk, OverlapStrategy::split, OverlapStrategy::comm_thread}) {
    const Threads threads(s == OverlapStrategy::comm_thread ? 2 : loop_threads);
    for (const Tile& t : {Tile{}, Tile{{3, 2, 5}}, Tile{{1, 1, 1}}}) {
      SCOPED_TRACE(to_string(s) + (t ? " tiled" : " untiled"));
      check_strategy(c, OverlapOptions{s, t}, UntiledRows::plane_pairs);
      if (!t) check_strategy(c, OverlapOptions{s, t}, UntiledRows::single_planes);
    }
  }
}

}  // namespace

TEST(Overlap, FullPatternWallsUneven) {
  check_all_strategies({{13, 10, 7}, {false, false, false}, 1, HaloPattern::full}, 2);
}
TEST(Overlap, FullPatternPeriodicGhostTwo) {
  check_all_strategies({{12, 9, 8}, {true, true, true}, 2, HaloPattern::full}, 1);
}
TEST(Overlap, FacesMixedPeriodic) {
  check_all_strategies({{11, 6, 9}, {true, false, true}, 1, HaloPattern::faces}, 1);
}
TEST(Overlap, FlatGridDegenerateAxis) {
  check_all_strategies({{16, 12, 1}, {false, false, false}, 1, HaloPattern::full}, 1);
}

TEST(Overlap, KernelErrorsLeaveTheRegionAsExceptionsAfterTheExchange) {
  CartDecomposition cart(MPI_COMM_WORLD, {{12, 10, 8}, {true, true, true}, {0, 0, 0}});
  Grid3D<double> x(cart.local_box(), 1);
  for (auto s : {OverlapStrategy::bulk, OverlapStrategy::split, OverlapStrategy::comm_thread}) {
    SCOPED_TRACE(to_string(s));
    const Threads threads(2);
    OverlapDriver driver(cart, x, HaloPattern::full, 1, {s, std::array<long, 3>{2, 2, 2}}, UntiledRows::plane_pairs);
    // Every rank fails in every box: what terminated the process before must now be an exception.
    EXPECT_THROW(driver.apply(x, [](const Box3&) { throw InvalidArgument("kernel failed"); }), InvalidArgument);
    // The exchange completed despite the error, so the next sweep starts cleanly.
    std::atomic<long> boxes{0};
    EXPECT_NO_THROW(driver.apply(x, [&](const Box3&) { boxes.fetch_add(1); }));
    const auto& plan = driver.plan();
    const std::size_t items =
        s == OverlapStrategy::bulk ? plan.all().size() : plan.interior().size() + plan.shell().size();
    EXPECT_EQ(boxes.load(), static_cast<long>(items));
  }
}

TEST(Overlap, CommThreadNeedsTwoThreads) {
  const Threads one(1);
  CartDecomposition cart(MPI_COMM_WORLD, {{8, 8, 8}, {false, false, false}, {0, 0, 0}});
  Grid3D<double> x(cart.local_box(), 1);
  constexpr auto rows = UntiledRows::plane_pairs;
  EXPECT_THROW(OverlapDriver(cart, x, HaloPattern::full, 1, {OverlapStrategy::comm_thread, std::nullopt}, rows),
               InvalidArgument);
  EXPECT_THROW(OverlapDriver(cart, x, HaloPattern::full, 2, {}, rows), InvalidArgument);  // reach > ghost
  EXPECT_THROW(
      OverlapDriver(cart, x, HaloPattern::full, 1, {OverlapStrategy::bulk, std::array<long, 3>{0, 4, 4}}, rows),
      InvalidArgument);
}

TEST(Overlap, Rb3dResidualsEqualOneRankForEveryStrategyAndTile) {
  Rb3dOptions base;
  base.global = {13, 13, 13};  // uneven blocks at 2, 3 and 4 ranks
  base.iterations = 6;
  base.residual_every = 2;
  base.omega = 1.3;
  Metrics scratch;
  const auto reference = solve_rb3d(MPI_COMM_SELF, base, scratch);
  ASSERT_EQ(reference.residuals.size(), 4u);
  using Tile = std::optional<std::array<long, 3>>;
  for (auto s : {OverlapStrategy::bulk, OverlapStrategy::split, OverlapStrategy::comm_thread})
    for (const Tile& t : {Tile{}, Tile{{4, 3, 5}}}) {
      const Threads threads(s == OverlapStrategy::bulk ? 1 : 2);
      auto o = base;
      o.overlap = {s, t};
      Metrics m;
      const auto r = solve_rb3d(MPI_COMM_WORLD, o, m);
      EXPECT_EQ(r.residuals, reference.residuals) << to_string(s) << (t ? " tiled" : "");
      EXPECT_GT(m.seconds("sweep"), 0.0);
      EXPECT_LE(m.seconds("sweep"), r.time_s);  // kernel time is part of the loop's
      EXPECT_EQ(r.sweeps, 12);
    }
}

TEST(Overlap, Rb3dRejectsCommThreadWithOneThread) {
  Rb3dOptions o;
  o.global = {8, 8, 8};
  o.overlap.strategy = OverlapStrategy::comm_thread;
  EXPECT_THROW(o.validate(1, 1), InvalidArgument);
  EXPECT_NO_THROW(o.validate(1, 2));
  o.overlap = {OverlapStrategy::split, std::array<long, 3>{4, 0, 4}};
  EXPECT_THROW(o.validate(1, 2), InvalidArgument);
}
