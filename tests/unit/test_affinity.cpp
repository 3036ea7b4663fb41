#include <gtest/gtest.h>

#include <set>

#include "hympi/affinity.hpp"
#include "hympi/error.hpp"

using namespace hympi;

namespace {
// Core index of every thread of every rank under a plan, on `topo`.
std::vector<std::vector<int>> cores_of(const Topology& topo, AffinityOptions opt, int ranks, int threads) {
  std::vector<std::vector<int>> out;
  for (int r = 0; r < ranks; ++r) {
    const auto plan = plan_placement(topo, opt, r, ranks, threads);
    std::vector<int> cores;
    for (const auto& set : plan.thread_sets) {
      int found = -1;
      for (int c = 0; c < topo.cores(); ++c)
        if (topo.core_set(c) == set) found = c;
      cores.push_back(found);
    }
    out.push_back(cores);
  }
  return out;
}
}  // namespace

TEST(Affinity, CompactCoreFillsInOrder) {
  const auto topo = Topology::from_synthetic("pack:2 numa:1 core:4 pu:2");
  const auto c = cores_of(topo, {BindPolicy::core, Distribution::compact}, 2, 3);
  EXPECT_EQ(c[0], (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(c[1], (std::vector<int>{3, 4, 5}));
}

TEST(Affinity, ScatterCoreDealsRanksOverDomains) {
  const auto topo = Topology::from_synthetic("pack:2 numa:1 core:4 pu:2");
  const auto c = cores_of(topo, {BindPolicy::core, Distribution::scatter}, 4, 2);
  EXPECT_EQ(c[0], (std::vector<int>{0, 1}));
  EXPECT_EQ(c[1], (std::vector<int>{4, 5}));
  EXPECT_EQ(c[2], (std::vector<int>{2, 3}));
  EXPECT_EQ(c[3], (std::vector<int>{6, 7}));
}

TEST(Affinity, CoreBindingGivesDistinctCoresWhenTheyFit) {
  const auto topo = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/dual-epyc-like.xml");
  for (auto dist : {Distribution::compact, Distribution::scatter}) {
    std::set<int> used;
    for (const auto& rank : cores_of(topo, {BindPolicy::core, dist}, 16, 4))
      for (int core : rank) EXPECT_TRUE(used.insert(core).second) << "core " << core << " used twice";
    EXPECT_EQ(used.size(), 64u);
  }
}

TEST(Affinity, NumaAndPackageBinding) {
  const auto topo = Topology::from_synthetic("pack:2 numa:2 core:2 pu:1");
  for (int r = 0; r < 4; ++r) {
    const auto compact = plan_placement(topo, {BindPolicy::numa, Distribution::compact}, r, 4, 2);
    EXPECT_EQ(compact.rank_set, topo.numa_set(r));
    EXPECT_EQ(compact.thread_sets.size(), 2u);
    EXPECT_EQ(compact.thread_sets[1], topo.numa_set(r));
  }
  // 8 ranks on 4 domains: compact puts ranks 0,1 together, scatter puts ranks 0,4 together.
  EXPECT_EQ(plan_placement(topo, {BindPolicy::numa, Distribution::compact}, 1, 8, 1).rank_set, topo.numa_set(0));
  EXPECT_EQ(plan_placement(topo, {BindPolicy::numa, Distribution::scatter}, 1, 8, 1).rank_set, topo.numa_set(1));
  EXPECT_EQ(plan_placement(topo, {BindPolicy::package, Distribution::compact}, 1, 2, 1).rank_set,
            topo.package_set(1));
  EXPECT_EQ(plan_placement(topo, {BindPolicy::none, Distribution::compact}, 1, 2, 1).rank_set, topo.machine_set());
}

TEST(Affinity, ParseRejectsUnknownValues) {
  EXPECT_EQ(parse_bind_policy("numa"), BindPolicy::numa);
  EXPECT_EQ(parse_distribution("scatter"), Distribution::scatter);
  EXPECT_THROW(parse_bind_policy("socket"), InvalidArgument);
  EXPECT_THROW(parse_distribution("spread"), InvalidArgument);
  const auto topo = Topology::from_synthetic("pack:1 core:2 pu:1");
  EXPECT_THROW(plan_placement(topo, {}, 2, 2, 1), InvalidArgument);
  EXPECT_THROW(plan_placement(topo, {}, 0, 1, 0), InvalidArgument);
}

namespace {
ThreadPlacement row(int rank, int thread, int pu, int core, const std::string& bound, const std::string& intended) {
  return {"n0", "n0", rank, thread, pu, core, 0, 0, bound, intended};
}
}  // namespace

TEST(Affinity, CheckFlagsSharedCoresAndStrayThreads) {
  std::vector<ThreadPlacement> good{row(0, 0, 0, 0, "0", "0"), row(1, 0, 1, 1, "1", "1")};
  EXPECT_TRUE(check_placement(good, BindPolicy::core, 2).empty());

  std::vector<ThreadPlacement> shared{row(0, 0, 0, 0, "0", "0"), row(1, 0, 0, 0, "0", "0")};
  const auto p = check_placement(shared, BindPolicy::core, 2);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("shares core 0"), std::string::npos);
  // Oversubscribed (3 threads, 2 cores): sharing is expected, not a problem.
  shared.push_back(row(2, 0, 1, 1, "1", "1"));
  EXPECT_TRUE(check_placement(shared, BindPolicy::core, 2).empty());

  std::vector<ThreadPlacement> stray{row(0, 0, 1, 1, "0", "0")};
  EXPECT_EQ(check_placement(stray, BindPolicy::core, 2).size(), 1u);
  std::vector<ThreadPlacement> unbound{row(0, 0, 0, 0, "0-1", "0")};
  EXPECT_EQ(check_placement(unbound, BindPolicy::numa, 2).size(), 1u);
  EXPECT_TRUE(check_placement(unbound, BindPolicy::none, 2).empty());
}

TEST(Affinity, TableListsEveryThread) {
  std::vector<ThreadPlacement> rows{row(0, 0, 0, 0, "0", "0"), row(0, 1, 1, 1, "1", "1")};
  const auto table = format_placement_table(rows);
  EXPECT_NE(table.find("rank"), std::string::npos);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3);
  EXPECT_EQ(placement_json(rows).size(), 2u);
}
