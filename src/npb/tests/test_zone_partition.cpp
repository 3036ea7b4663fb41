// Zone -> rank packing, thread balancing and zone splitting.
#include "hympi/core/error.hpp"
#include "hympi/npb/zone_partition.hpp"

#include <gtest/gtest.h>

#include <numeric>

namespace {

const hympi::ZoneGeometry kBtW{4, 4, 64, 64, 8, 4.5};
const hympi::ZoneGeometry kBtC{16, 16, 480, 320, 28, 4.5};
const hympi::ZoneGeometry kSpA{4, 4, 128, 128, 16, 1.0};

void expect_consistent(const hympi::ZoneGrid& grid, const hympi::ZonePartition& p) {
  std::vector<int> seen(static_cast<std::size_t>(grid.num_zones()), 0);
  double total = 0.0;
  for (int r = 0; r < p.num_ranks(); ++r) {
    double load = 0.0;
    for (int z : p.zones_of(r)) {
      ++seen[z];
      EXPECT_EQ(p.owner(z), r);
      load += grid.zone(z).points();
    }
    EXPECT_DOUBLE_EQ(load, p.load(r));
    total += load;
  }
  for (int s : seen) EXPECT_EQ(s, 1);
  EXPECT_DOUBLE_EQ(total, grid.total_points());
  EXPECT_GE(p.imbalance(), 1.0 - 1e-12);
}

TEST(ZonePartition, EveryZoneOwnedOnceForAllRankCounts) {
  const hympi::ZoneGrid grid(kBtW);
  for (auto method : {hympi::PackingMethod::npb, hympi::PackingMethod::lpt}) {
    for (int n = 1; n <= grid.num_zones(); ++n) {
      hympi::ZonePartitionOptions o;
      o.method = method;
      expect_consistent(grid, hympi::ZonePartition(grid, n, o));
    }
  }
}

TEST(ZonePartition, EqualZonesBalancePerfectlyWhenRanksDivideZones) {
  const hympi::ZoneGrid grid(kSpA);
  for (int n : {1, 2, 4, 8, 16}) {
    const hympi::ZonePartition p(grid, n);
    EXPECT_DOUBLE_EQ(p.imbalance(), 1.0) << n;
    EXPECT_DOUBLE_EQ(p.speedup(), n);
  }
  EXPECT_GT(hympi::ZonePartition(grid, 3).imbalance(), 1.0);
}

TEST(ZonePartition, NpbPackingPrefersZonesThatShareFacesWithTheRank) {
  // SP-MZ zones are all equal, so the 5% window admits every zone: the reference then keeps
  // neighbours together, which LPT (zone id order) does not care about.
  const hympi::ZoneGrid grid(kSpA);
  auto internal_faces = [&](const hympi::ZonePartition& p) {
    int n = 0;
    for (const auto& z : grid.zones()) {
      for (auto f : {hympi::ZoneFace::east, hympi::ZoneFace::north}) n += p.owner(z.next(f)) == p.owner(z.id);
    }
    return n;
  };
  hympi::ZonePartitionOptions lpt;
  lpt.method = hympi::PackingMethod::lpt;
  EXPECT_GT(internal_faces(hympi::ZonePartition(grid, 8)), internal_faces(hympi::ZonePartition(grid, 8, lpt)));
}

TEST(ZonePartition, UnevenZonesAreBalancedBetterThanRoundRobin) {
  const hympi::ZoneGrid grid(kBtC);
  const hympi::ZonePartition p(grid, 16);
  EXPECT_LT(p.imbalance(), 1.05);
  // Round robin over zone ids for comparison: the stretched zones make it far worse.
  std::vector<double> rr(16, 0.0);
  for (const auto& z : grid.zones()) rr[z.id % 16] += z.points();
  EXPECT_GT(*std::max_element(rr.begin(), rr.end()) / (grid.total_points() / 16), p.imbalance());
}

TEST(ZonePartition, ThreadBalancingKeepsTheTotalAndFollowsLoad) {
  const hympi::ZoneGrid grid(kBtW);
  hympi::ZonePartitionOptions o;
  o.threads_per_rank = 4;
  o.balance_threads = true;
  o.method = hympi::PackingMethod::lpt;
  const hympi::ZonePartition balanced(grid, 3, o);
  EXPECT_EQ(balanced.total_threads(), 12);
  o.balance_threads = false;
  const hympi::ZonePartition fixed(grid, 3, o);
  EXPECT_LE(balanced.imbalance(), fixed.imbalance() + 1e-12);
  for (int a = 0; a < 3; ++a) {
    for (int b = 0; b < 3; ++b) {
      if (balanced.load(a) > balanced.load(b)) {
        EXPECT_GE(balanced.threads(a), balanced.threads(b));
      }
    }
  }
  o.balance_threads = true;
  o.max_threads = 4;
  const hympi::ZonePartition capped(grid, 3, o);
  for (int r = 0; r < 3; ++r) EXPECT_LE(capped.threads(r), 4);
}

TEST(ZonePartition, RejectsBadInput) {
  const hympi::ZoneGrid lu({4, 4, 64, 64, 8, 1.0});
  EXPECT_THROW(hympi::ZonePartition(lu, 17), hympi::InvalidArgument);
  EXPECT_THROW(hympi::ZonePartition(lu, 0), hympi::InvalidArgument);
  hympi::ZonePartitionOptions o;
  o.threads_per_rank = 0;
  EXPECT_THROW(hympi::ZonePartition(lu, 2, o), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::parse_packing_method("greedy"), hympi::InvalidArgument);
  EXPECT_EQ(hympi::parse_packing_method("lpt"), hympi::PackingMethod::lpt);
}

TEST(ZoneSplit, MoreRanksCostMorePointsLikeTable3) {
  const hympi::ZoneGrid grid(kBtW);
  double previous = grid.total_points();
  for (int n : {1, 4, 16, 32, 64}) {
    const auto s = hympi::split_zones(grid, n);
    EXPECT_DOUBLE_EQ(s.original_points, grid.total_points());
    EXPECT_GE(s.total_points, previous) << n;
    previous = s.total_points;
    // Every cut duplicates one boundary plane on each side: 2 * (cut face) points.
    double blocks = 0.0;
    for (const auto& b : s.blocks) blocks += b.points();
    EXPECT_DOUBLE_EQ(blocks, s.total_points);
    EXPECT_EQ(static_cast<int>(s.blocks.size()), grid.num_zones() + s.splits);
  }
  EXPECT_EQ(hympi::split_zones(grid, 1).splits, 0);
  EXPECT_GT(hympi::split_zones(grid, 64).extra_fraction(), 0.0);
}

TEST(ZoneSplit, SplittingLetsMoreRanksBalanceThanWholeZones) {
  // 16 uneven zones cannot keep 16 ranks balanced; split blocks can.
  const hympi::ZoneGrid grid(kBtW);
  const hympi::ZonePartition whole(grid, 16);
  const auto split = hympi::split_zones(grid, 16);
  EXPECT_GT(whole.imbalance(), 2.0);
  EXPECT_LT(split.imbalance, whole.imbalance());
  EXPECT_LT(split.imbalance, 1.3);
  EXPECT_THROW((void)hympi::split_zones(grid, 0), hympi::InvalidArgument);
}

TEST(ZoneSplit, CutsKeepTheInteriorCovered) {
  // A block cut in x: halves overlap by two planes, so their interiors tile the parent's.
  const hympi::ZoneGrid grid({1, 1, 40, 10, 10, 1.0});
  const auto s = hympi::split_zones(grid, 2, 0.0);
  ASSERT_EQ(s.blocks.size(), 2u);
  const auto& a = s.blocks[0];
  const auto& b = s.blocks[1];
  EXPECT_EQ((a.nx - 2) + (b.nx - 2), 40 - 2);
  EXPECT_EQ(b.x0 + b.nx, 40);
  EXPECT_EQ(b.x0, a.nx - 2);
}

}  // namespace
