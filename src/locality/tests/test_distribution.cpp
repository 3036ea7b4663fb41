// Distributions of array dimensions over locations: where(i) for even and uneven splits, grids,
// wrap-around, page attribution, bad input; distributed arrays and onloc tasks on a synthetic machine.
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <tuple>
#include <vector>

#include "throws_message.hpp"
#include "hympi/core/error.hpp"
#include "hympi/locality/distributed_array.hpp"
#include "hympi/locality/region.hpp"
#include "synthetic_machine.hpp"

using hympi::InvalidArgument;
using namespace hympi::locality;

namespace {
constexpr auto B = DimDistribution::block;
constexpr auto N = DimDistribution::none;

std::vector<std::tuple<std::size_t, std::size_t, int>> runs_of(const ArrayDistribution& d) {
  std::vector<std::tuple<std::size_t, std::size_t, int>> out;
  d.for_each_run([&](std::size_t first, std::size_t count, int location) { out.emplace_back(first, count, location); });
  return out;
}
}  // namespace

TEST(Distribution, BalancedGrids) {
  EXPECT_EQ(balanced_grid(6, 2), (std::vector<long long>{3, 2}));
  EXPECT_EQ(balanced_grid(12, 3), (std::vector<long long>{3, 2, 2}));
  EXPECT_EQ(balanced_grid(16, 2), (std::vector<long long>{4, 4}));
  EXPECT_EQ(balanced_grid(7, 2), (std::vector<long long>{7, 1}));
  EXPECT_EQ(balanced_grid(1, 3), (std::vector<long long>{1, 1, 1}));
}

TEST(Distribution, UnevenBlocksIn1D) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const ArrayDistribution d(locs, {10}, {B}, {0, 3});  // 3, 3, 2, 2
  const int owner[10] = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3};
  for (std::size_t i = 0; i < 10; ++i) {
    const std::size_t index[1] = {i};
    EXPECT_EQ(d.where(index), owner[i]) << i;
    EXPECT_EQ(d.where_linear(i), owner[i]) << i;
  }
  // Fewer elements than locations: the last location owns nothing.
  const ArrayDistribution small(locs, {3}, {B}, {0, 3});
  EXPECT_EQ(runs_of(small), (std::vector<std::tuple<std::size_t, std::size_t, int>>{{0, 1, 0}, {1, 1, 1}, {2, 1, 2}}));
}

TEST(Distribution, RangesWrapAndShift) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const ArrayDistribution d(locs, {6, 5}, {B, N}, {3, 5});  // slots 3, 4, 5 -> locations 3, 0, 1
  const std::size_t rows[6] = {0, 1, 2, 3, 4, 5};
  const int owner[6] = {3, 3, 0, 0, 1, 1};
  for (std::size_t r : rows) {
    const std::size_t index[2] = {r, 4};
    EXPECT_EQ(d.where(index), owner[r]) << r;
  }
}

TEST(Distribution, TwoBlockDimensionsFormAGrid) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const ArrayDistribution d(locs, {4, 6}, {B, B}, {0, 3});
  EXPECT_EQ(d.grid(), (std::vector<long long>{2, 2}));
  for (std::size_t i = 0; i < 4; ++i)
    for (std::size_t j = 0; j < 6; ++j) {
      const std::size_t index[2] = {i, j};
      EXPECT_EQ(d.where(index), static_cast<int>(2 * (i / 2) + j / 3)) << i << "," << j;
    }
  // A none dimension before a block one: rows interleave owners.
  const ArrayDistribution cols(locs, {2, 8}, {N, B}, {0, 1});
  EXPECT_EQ(runs_of(cols),
            (std::vector<std::tuple<std::size_t, std::size_t, int>>{{0, 4, 0}, {4, 4, 1}, {8, 4, 0}, {12, 4, 1}}));
  // No block dimension: the range's first location owns everything.
  const ArrayDistribution whole(locs, {3, 3}, {N, N}, {2, 3});
  EXPECT_EQ(runs_of(whole), (std::vector<std::tuple<std::size_t, std::size_t, int>>{{0, 9, 2}}));
}

TEST(Distribution, PartialPagesGoToTheOwnerOfMostBytes) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  // 1500 doubles over 2 locations: 6000 B each; page 1 holds 1904 B of location 0 and 2192 B of 1.
  const ArrayDistribution d(locs, {1500}, {B}, {0, 1});
  EXPECT_EQ(d.page_owners(8, 4096), (std::vector<int>{0, 1, 1}));
  // 1024 doubles over 4: every page is half one owner, half the next; a tie goes to the lower address.
  const ArrayDistribution tie(locs, {1024}, {B}, {0, 3});
  EXPECT_EQ(tie.page_owners(8, 4096), (std::vector<int>{0, 2}));
  EXPECT_THROW((void)tie.page_owners(0, 4096), InvalidArgument);
}

TEST(Distribution, BadInputThrows) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  try {
    const ArrayDistribution d(locs, {4, 4}, {B}, {0, 3});
    FAIL() << "a rank-1 distribution was accepted for a rank-2 array";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "distribution 'block' has 1 entries but the array has rank 2");
  }
  EXPECT_THROW(ArrayDistribution(locs, {4, 0}, {B, N}, {0, 3}), InvalidArgument);
  EXPECT_THROW(ArrayDistribution(locs, {4}, {B}, {2, 1}), InvalidArgument);
  const ArrayDistribution d(locs, {4, 4}, {B, N}, {0, 3});
  const std::size_t outside[2] = {4, 0};
  const std::size_t short_index[1] = {0};
  EXPECT_THROW((void)d.where(outside), InvalidArgument);
  EXPECT_THROW((void)d.where(short_index), InvalidArgument);
  // The rank is checked before anything is allocated: this array would need 8 TiB.
  using Huge = DistributedArray<double, 2>;
  EXPECT_THROW(Huge(locs, {std::size_t{1} << 20, std::size_t{1} << 20}, {B}), InvalidArgument);
}

TEST(Distribution, ParsesTheSeedsSpelling) {
  EXPECT_EQ(parse_dim_distributions("block, *"), (std::vector<DimDistribution>{B, N}));
  EXPECT_EQ(parse_dim_distributions("none,block,block"), (std::vector<DimDistribution>{N, B, B}));
  EXPECT_EQ(to_string(std::vector<DimDistribution>{B, N}), "block,none");
  EXPECT_THROW((void)parse_dim_distributions("block,,none"), InvalidArgument);
  hympi::test::expect_throws_message<InvalidArgument>(
      [] { (void)parse_dim_distributions("cyclic"); },
      "unknown dimension distribution 'cyclic' (expected block or none)");
}

TEST(DistributedArray, GlobalIndexingOnASyntheticMachine) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  DistributedArray<int, 2> a(locs, {10, 3}, {B, N});
  EXPECT_EQ(a.placed_by(), PlacedBy::unplaced);  // not this machine: nothing to bind
  EXPECT_EQ(a.size(), 30u);
  for (std::size_t i = 0; i < 10; ++i)
    for (std::size_t j = 0; j < 3; ++j) {
      EXPECT_EQ(a(i, j), 0);
      a(i, j) = static_cast<int>(10 * i + j);
    }
  EXPECT_EQ(a(7, 2), 72);
  EXPECT_EQ((a[{7, 2}]), 72);
  EXPECT_EQ(a.data()[7 * 3 + 2], 72);
  EXPECT_EQ(a.where(2, 0), 0);
  EXPECT_EQ(a.where(3, 1), 1);
  EXPECT_EQ(a.where(7, 2), 2);
  EXPECT_EQ(a.where(9, 0), 3);
  EXPECT_EQ(a.range().count(), 4);
  EXPECT_EQ(a.page_owners(), (std::vector<int>{0}));  // 120 B: one page, mostly location 0's
  EXPECT_THROW((void)a.placement(), hympi::TopologyError);
}

TEST(DistributedArray, OnlocTasksRunWhereTheElementLives) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  DistributedArray<int, 1> a(locs, {37}, {B});
  const int n = 8;
  const auto plan = plan_threads(locs, a.range(), n);
  std::vector<int> wrong;
  std::atomic<int> ran{0};
  parallel_onloc(a, n, [&](Here& here) {
    if (here.thread() != 0) return;
    for (std::size_t i = 0; i < a.size(); ++i)
      here.task_onloc(a, {i}, [&, i] {
        a(i) = plan[static_cast<std::size_t>(omp_get_thread_num())];
        ++ran;
      });
  });
  EXPECT_EQ(ran.load(), 37);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a(i), a.where(i)) << i;
  // Another Locations object, even with equal sets, is not this region's.
  const auto other = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  EXPECT_THROW(parallel(other, 2,
                        [&](Here& here) {
                          if (here.thread() == 0) here.task_onloc(a, {0}, [] {});
                        }),
               InvalidArgument);
  EXPECT_THROW(parallel(locs, 2,
                        [&](Here& here) {
                          if (here.thread() == 0) here.task_onloc(a, {37}, [] {});
                        }),
               InvalidArgument);
}
