// The NPB-MZ data layouts (Jin et al., "High performance computing using MPI and OpenMP on multi-core parallel
// systems", Fig. 9): names, the random draw, which location owns each page of a
// zone array under each layout on a synthetic 4-NUMA machine (nothing bound there), the team that runs
// the sweeps, and on this machine what the kernel says about the pages. A whole BT-MZ/SP-MZ run per
// layout, verification bits compared, is tests/python/test_data_layout.py.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "throws_message.hpp"
#include "hympi/core/error.hpp"
#include "hympi/npb/bt.hpp"
#include "hympi/npb/data_layout.hpp"
#include "hympi/npb/mz_run.hpp"
#include "synthetic_machine.hpp"

using hympi::InvalidArgument;
using hympi::Topology;
using hympi::npb::DataLayout;
using hympi::npb::DataLayoutOptions;
using hympi::npb::ZoneArray;
using hympi::npb::ZonePlacement;

namespace {

const Topology& machine() {
  static const Topology topo = Topology::this_machine();
  return topo;
}
DataLayoutOptions options(DataLayout layout, std::uint64_t seed = 7) {
  DataLayoutOptions o;
  o.layout = layout;
  o.seed = seed;
  return o;
}
constexpr std::size_t kRows = 6 * 20;    // nz x ny of a 20 x 20 x 6 zone
constexpr std::size_t kRowLen = 5 * 21;  // nxmax x 5 components
std::size_t pages_of(std::size_t doubles) {
  const std::size_t page = hympi::locality::page_bytes();
  return (doubles * sizeof(double) + page - 1) / page;
}

}  // namespace

TEST(DataLayout, NamesAndBadInput) {
  for (const char* name : {"first-touch", "one-location", "access-pattern", "random"})
    EXPECT_EQ(hympi::to_string(hympi::npb::parse_data_layout(name)), name);
  hympi::test::expect_throws_message<InvalidArgument>(
      [] { (void)hympi::npb::parse_data_layout("interleave"); },
      "unknown data layout 'interleave' (expected first-touch, one-location, access-pattern or random)");
}

TEST(DataLayout, RandomOwnersAreReproducibleAndSpread) {
  std::vector<int> per(4, 0);
  for (std::size_t p = 0; p < 40000; ++p) {
    const int owner = hympi::npb::random_owner(1, 3, 2, p, 4);
    ASSERT_GE(owner, 0);
    ASSERT_LT(owner, 4);
    EXPECT_EQ(owner, hympi::npb::random_owner(1, 3, 2, p, 4));  // a pure function: every run draws alike
    ++per[static_cast<std::size_t>(owner)];
  }
  for (int n : per) EXPECT_NEAR(n, 10000, 400);  // about 4 standard deviations
  int differ_seed = 0, differ_zone = 0, differ_array = 0;
  for (std::size_t p = 0; p < 1000; ++p) {
    const int base = hympi::npb::random_owner(1, 3, 2, p, 4);
    differ_seed += base != hympi::npb::random_owner(2, 3, 2, p, 4);
    differ_zone += base != hympi::npb::random_owner(1, 4, 2, p, 4);
    differ_array += base != hympi::npb::random_owner(1, 3, 1, p, 4);
  }
  EXPECT_GT(differ_seed, 600);  // 3/4 expected: other seeds, zones and arrays draw independently
  EXPECT_GT(differ_zone, 600);
  EXPECT_GT(differ_array, 600);
  EXPECT_EQ(hympi::npb::random_owner(5, 0, 0, 9, 1), 0);
}

TEST(DataLayout, EachLayoutOwnsThePagesItSaysOnASyntheticMachine) {
  const std::size_t pages = pages_of(kRows * kRowLen);
  ASSERT_GE(pages, 8U);
  {
    const ZonePlacement one(hympi::test::four_numa_machine(), options(DataLayout::one_location), 8);
    const ZoneArray a = one.array(kRows, kRowLen, 0, 0);
    EXPECT_EQ(a.page_owners(), std::vector<int>(pages, 0));
    EXPECT_FALSE(one.located());
    EXPECT_EQ(one.to_json()["locations"], 4);
    EXPECT_EQ(one.to_json()["placed_by"]["unplaced"], 1);  // a synthetic machine: nothing bound
  }
  {
    const ZonePlacement random(hympi::test::four_numa_machine(), options(DataLayout::random, 11), 8);
    const ZoneArray a = random.array(kRows, kRowLen, 5, 3);
    ASSERT_EQ(a.page_owners().size(), pages);
    for (std::size_t p = 0; p < pages; ++p)
      EXPECT_EQ(a.page_owners()[p], hympi::npb::random_owner(11, 5, 3, p, 4)) << p;
    EXPECT_GE(std::set<int>(a.page_owners().begin(), a.page_owners().end()).size(), 3U);
    EXPECT_EQ(random.to_json()["seed"], 11);
  }
  {
    // 8 threads over the 4 locations: rows in 4 blocks, the owners rising page by page.
    const ZonePlacement pattern(hympi::test::four_numa_machine(), options(DataLayout::access_pattern), 8);
    EXPECT_TRUE(pattern.located());
    const ZoneArray a = pattern.array(kRows, kRowLen, 0, 0);
    const std::vector<int>& owners = a.page_owners();
    EXPECT_TRUE(std::is_sorted(owners.begin(), owners.end()));
    EXPECT_EQ(owners.front(), 0);
    EXPECT_EQ(owners.back(), 3);
    EXPECT_EQ(pattern.to_json()["team"], "locality");
    EXPECT_EQ(pattern.to_json()["team_locations"], 4);
    // 2 threads sit on the first 2 locations: the data goes only there.
    const ZonePlacement two(hympi::test::four_numa_machine(), options(DataLayout::access_pattern), 2);
    const ZoneArray b = two.array(kRows, kRowLen, 0, 0);
    EXPECT_EQ(std::set<int>(b.page_owners().begin(), b.page_owners().end()), (std::set<int>{0, 1}));
  }
  {
    const ZonePlacement first(hympi::test::four_numa_machine(), options(DataLayout::first_touch), 8);
    const ZoneArray a = first.array(kRows, kRowLen, 0, 0);
    EXPECT_TRUE(a.page_owners().empty());  // the kernel decides: nothing intended
    EXPECT_EQ(first.to_json()["team"], "openmp");
  }
  for (DataLayout layout :
       {DataLayout::first_touch, DataLayout::one_location, DataLayout::access_pattern, DataLayout::random}) {
    const ZonePlacement placement(hympi::test::four_numa_machine(), options(layout), 8);
    const ZoneArray a = placement.array(kRows, kRowLen, 1, 1);
    ASSERT_EQ(a.size(), kRows * kRowLen);
    EXPECT_TRUE(std::all_of(a.data(), a.data() + a.size(), [](double v) { return v == 0.0; }));
    EXPECT_TRUE(placement.array(0, kRowLen, 1, 2).empty());
    EXPECT_THROW((void)a.placement(), hympi::TopologyError);  // the kernel knows nothing of this machine
  }
}

TEST(DataLayout, TheTeamRunsTheBodyOnEveryThread) {
  for (DataLayout layout : {DataLayout::first_touch, DataLayout::access_pattern}) {
    const ZonePlacement placement(hympi::test::four_numa_machine(), options(layout), 3);
    omp_set_num_threads(3);
    std::atomic<int> ran{0};
    std::vector<int> rows(30, -1);
    placement.run([&] {
      ++ran;
#pragma omp for schedule(static)
      for (int r = 0; r < 30; ++r) rows[static_cast<std::size_t>(r)] = omp_get_thread_num();
    });
    EXPECT_EQ(ran.load(), 3) << hympi::to_string(layout);
    // The static schedule of both teams: thread t sweeps rows 10t .. 10t+9.
    for (int r = 0; r < 30; ++r) EXPECT_EQ(rows[static_cast<std::size_t>(r)], r / 10) << r;
  }
  EXPECT_THROW(ZonePlacement(hympi::test::four_numa_machine(), options(DataLayout::random), 0), InvalidArgument);
}

TEST(DataLayout, PagesAreWhereTheKernelSaysOnThisMachine) {
  const int nodes = machine().numa_nodes();
  for (DataLayout layout :
       {DataLayout::first_touch, DataLayout::one_location, DataLayout::access_pattern, DataLayout::random}) {
    const ZonePlacement placement(machine(), options(layout), 2);
    const ZoneArray a = placement.array(kRows, kRowLen, 0, 0);
    const auto where = a.placement();
    EXPECT_EQ(where.pages, pages_of(a.size())) << hympi::to_string(layout);
    EXPECT_EQ(where.absent, 0U);  // every page was touched when the array was made
    std::size_t total = 0;
    for (const auto& [node, n] : where.per_node) total += n;
    EXPECT_EQ(total, where.pages);
    if (layout == DataLayout::first_touch) {
      EXPECT_FALSE(where.has_intent);
    } else {
      EXPECT_TRUE(where.has_intent);
      EXPECT_EQ(where.on_intended, where.pages) << hympi::to_string(layout);
    }
    if (nodes == 1) {
      EXPECT_EQ(where.per_node, (std::map<int, std::size_t>{{0, where.pages}}));
    }
    if (layout == DataLayout::one_location) {
      EXPECT_EQ(where.per_node.size(), 1U);  // every page on location 0's node
    }
  }
}

TEST(DataLayout, ABtZoneUsesItsPlacementsArraysAndTeam) {
  // A zone built on a layout: its solution field's pages are the placement's, with its intent.
  const hympi::ZoneGeometry g{1, 1, 12, 12, 8};
  const auto c = hympi::npb::CfdConstants::make(g, 0.01);
  const hympi::npb::ZoneDims dims{12, 12, 8, hympi::padded_nx(12)};
  const ZonePlacement placement(machine(), options(DataLayout::one_location), 2);
  hympi::npb::BtZone zone(c, dims, placement, 0);
  zone.initialize();
  zone.step();
  const auto where = zone.field_placement();
  EXPECT_EQ(where.pages, pages_of(dims.size5()));
  EXPECT_TRUE(where.has_intent);
  EXPECT_EQ(where.on_intended, where.pages);
  EXPECT_EQ(placement.to_json()["placed_by"].size(), 1U);
}

// Zones are built and solved by for_each_owned: with ThreadWork::zones each on the thread that owns it, alone (so
// that thread first-touches its pages), with loops in order by the caller, whose team its regions use.
TEST(ThreadWork, ZonesAreWorkedOnByTheirOwnerAloneAndLoopsInOrderByTheCallersTeam) {
  using hympi::npb::ThreadWork;
  omp_set_num_threads(2);
  const std::vector<int> owner = {1, 0, 1, 1, 0, 2};  // 2 folds onto thread 0 of a team of two
  for (const ThreadWork how : {ThreadWork::zones, ThreadWork::loops}) {
    std::vector<int> ran_on(owner.size(), -1), team_inside(owner.size(), 0), order;
    std::mutex mutex;
    hympi::npb::for_each_owned(owner, how, [&](std::size_t l) {
      int inner = 0;
#pragma omp parallel
      {
#pragma omp single
        inner = omp_get_num_threads();
      }
      const std::lock_guard lock(mutex);
      ran_on[l] = omp_get_thread_num();
      team_inside[l] = inner;
      order.push_back(static_cast<int>(l));
    });
    for (std::size_t l = 0; l < owner.size(); ++l) {
      EXPECT_EQ(ran_on[l], how == ThreadWork::zones ? owner[l] % 2 : 0) << l;
      EXPECT_EQ(team_inside[l], how == ThreadWork::zones ? 1 : 2) << l;
    }
    if (how == ThreadWork::loops) {
      EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5}));
    }
  }
  // A zone that throws on its thread fails the call, after the region, with its own exception.
  EXPECT_THROW(hympi::npb::for_each_owned(owner, ThreadWork::zones,
                                          [](std::size_t l) {
                                            if (l == 3) throw InvalidArgument("zone 3");
                                          }),
               InvalidArgument);
}

