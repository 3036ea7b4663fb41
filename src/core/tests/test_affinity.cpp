#include <gtest/gtest.h>
#include <omp.h>

#include <cstdlib>
#include <set>
#include <string>

#include "hympi/core/affinity.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"

using namespace hympi;

namespace {
// Core index of every thread of every rank under a plan, on `topo`.
std::vector<std::vector<int>> cores_of(const Topology& topo, AffinityOptions opt, int ranks, int threads) {
  std::vector<std::vector<int>> out;
  for (int r = 0; r < ranks; ++r) {
    const auto plan = plan_binding(topo, opt, r, ranks, threads);
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
    const auto compact = plan_binding(topo, {BindPolicy::numa, Distribution::compact}, r, 4, 2);
    EXPECT_EQ(compact.rank_set, topo.numa_set(r));
    EXPECT_EQ(compact.thread_sets.size(), 2u);
    EXPECT_EQ(compact.thread_sets[1], topo.numa_set(r));
  }
  // 8 ranks on 4 domains: compact puts ranks 0,1 together, scatter puts ranks 0,4 together.
  EXPECT_EQ(plan_binding(topo, {BindPolicy::numa, Distribution::compact}, 1, 8, 1).rank_set, topo.numa_set(0));
  EXPECT_EQ(plan_binding(topo, {BindPolicy::numa, Distribution::scatter}, 1, 8, 1).rank_set, topo.numa_set(1));
  EXPECT_EQ(plan_binding(topo, {BindPolicy::package, Distribution::compact}, 1, 2, 1).rank_set,
            topo.package_set(1));
  EXPECT_EQ(plan_binding(topo, {BindPolicy::none, Distribution::compact}, 1, 2, 1).rank_set, topo.machine_set());
}

TEST(Affinity, ParseRejectsUnknownValues) {
  EXPECT_EQ(parse_bind_policy("numa"), BindPolicy::numa);
  EXPECT_EQ(parse_distribution("scatter"), Distribution::scatter);
  EXPECT_THROW(parse_bind_policy("socket"), InvalidArgument);
  EXPECT_THROW(parse_distribution("spread"), InvalidArgument);
  const auto topo = Topology::from_synthetic("pack:1 core:2 pu:1");
  EXPECT_THROW(plan_binding(topo, {}, 2, 2, 1), InvalidArgument);
  EXPECT_THROW(plan_binding(topo, {}, 0, 1, 0), InvalidArgument);
}

namespace {
ThreadBinding row(int rank, int thread, int pu, int core, const std::string& bound, const std::string& intended) {
  return {"n0", "n0", rank, thread, pu, core, 0, 0, bound, intended};
}
}  // namespace

TEST(Affinity, CheckFlagsSharedCoresAndStrayThreads) {
  std::vector<ThreadBinding> good{row(0, 0, 0, 0, "0", "0"), row(1, 0, 1, 1, "1", "1")};
  EXPECT_TRUE(check_binding(good, BindPolicy::core, 2).empty());

  std::vector<ThreadBinding> shared{row(0, 0, 0, 0, "0", "0"), row(1, 0, 0, 0, "0", "0")};
  const auto p = check_binding(shared, BindPolicy::core, 2);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NE(p[0].find("shares core 0"), std::string::npos);
  // Oversubscribed (3 threads, 2 cores): sharing is expected, not a problem.
  shared.push_back(row(2, 0, 1, 1, "1", "1"));
  EXPECT_TRUE(check_binding(shared, BindPolicy::core, 2).empty());

  std::vector<ThreadBinding> stray{row(0, 0, 1, 1, "0", "0")};
  EXPECT_EQ(check_binding(stray, BindPolicy::core, 2).size(), 1u);
  std::vector<ThreadBinding> unbound{row(0, 0, 0, 0, "0-1", "0")};
  EXPECT_EQ(check_binding(unbound, BindPolicy::numa, 2).size(), 1u);
  EXPECT_TRUE(check_binding(unbound, BindPolicy::none, 2).empty());
}

TEST(Affinity, TableListsEveryThread) {
  std::vector<ThreadBinding> rows{row(0, 0, 0, 0, "0", "0"), row(0, 1, 1, 1, "1", "1")};
  const auto table = format_binding_table(rows);
  EXPECT_NE(table.find("rank"), std::string::npos);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 3);
  EXPECT_EQ(binding_json(rows).size(), 2u);
}

TEST(Affinity, DefaultThreadsShareTheCoresAmongTheRanks) {
  EXPECT_EQ(default_threads(2, 1), 2);
  EXPECT_EQ(default_threads(2, 2), 1);
  EXPECT_EQ(default_threads(2, 3), 1);  // more ranks than cores: still one thread each
  EXPECT_EQ(default_threads(64, 16), 4);
  EXPECT_EQ(default_threads(8, 3), 2);  // rounds down: never more threads than cores
  EXPECT_THROW(default_threads(0, 1), InvalidArgument);
  EXPECT_THROW(default_threads(2, 0), InvalidArgument);
  // Virtual nodes split the cores and the ranks alike; the fullest node decides.
  EXPECT_EQ(machine_default_threads(64, 4, 1), 16);
  EXPECT_EQ(machine_default_threads(64, 4, 2), 16);
  EXPECT_EQ(machine_default_threads(8, 3, 2), 2);
  EXPECT_EQ(machine_default_threads(2, 4, 2), 1);
  EXPECT_EQ(machine_default_threads(2, 3, 5), 1);
  EXPECT_THROW(machine_default_threads(2, 2, 0), InvalidArgument);
}

namespace {
// Rows as the app frame would observe them when every thread got the set the plan asked for.
std::vector<ThreadBinding> planned_rows(const Topology& topo, AffinityOptions opt, int ranks, int threads,
                                          const std::string& machine = "n0") {
  std::vector<ThreadBinding> rows;
  for (int r = 0; r < ranks; ++r) {
    const auto plan = plan_binding(topo, opt, r, ranks, threads);
    for (int t = 0; t < threads; ++t) {
      const std::string set = plan.bind == BindPolicy::none ? topo.machine_set().to_list()
                                                            : plan.thread_sets[static_cast<std::size_t>(t)].to_list();
      rows.push_back({machine, machine, r, t, -1, -1, -1, -1, set, plan.bind == BindPolicy::none ? "" : set});
    }
  }
  return rows;
}

const char* const kRecorded[] = {"ci-vm-2core.xml", "dual-epyc-like.xml", "two-socket-smt.xml"};
}  // namespace

TEST(Affinity, DefaultThreadsNeverSharePusOnRecordedMachines) {
  for (const char* name : kRecorded) {
    const auto topo = Topology::from_xml_file(std::string(HYMPI_TEST_DATA "/topologies/") + name);
    for (int ranks : {1, 2, 3, 4, topo.cores()}) {
      if (ranks > topo.cores()) continue;  // more ranks than cores cannot avoid sharing
      const int threads = default_threads(topo.cores(), ranks);
      // Compact core binding and no binding; scatter and numa keep a rank's threads in one domain,
      // which a rank with more threads than the domain has PUs overfills (see the next test).
      for (auto bind : {BindPolicy::core, BindPolicy::none}) {
        const auto sharing = assess_pu_sharing(planned_rows(topo, {bind}, ranks, threads), topo.pus());
        EXPECT_EQ(sharing.shared_pus, 0) << name << " " << ranks << "x" << threads << " " << to_string(bind) << ": "
                                         << sharing.summary;
        EXPECT_FALSE(sharing.oversubscribed) << name << " " << sharing.summary;
        EXPECT_TRUE(sharing.summary.empty());
      }
    }
  }
}

TEST(Affinity, DomainBindingOverfilledByManyThreadsIsShared) {
  const auto topo = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/dual-epyc-like.xml");
  // 8 ranks x 8 threads fill the 8 NUMA domains of 8 PUs exactly; 3 ranks x 21 threads pack 21
  // threads into each of 3 domains of 8 PUs: 8 PUs of each carry two or three threads.
  EXPECT_EQ(count_shared_pus(planned_rows(topo, {BindPolicy::numa}, 8, 8)), 0);
  EXPECT_EQ(count_shared_pus(planned_rows(topo, {BindPolicy::numa}, 3, 21)), 24);
  EXPECT_EQ(count_shared_pus(planned_rows(topo, {BindPolicy::core, Distribution::scatter}, 8, 8)), 0);
}

TEST(Affinity, OneThreadPerPuPerRankSharesEveryPu) {
  // What OpenMP does on its own: every rank starts one thread per PU, so 2 ranks share them all.
  for (const char* name : kRecorded) {
    const auto topo = Topology::from_xml_file(std::string(HYMPI_TEST_DATA "/topologies/") + name);
    const auto unbound = assess_pu_sharing(planned_rows(topo, {BindPolicy::none}, 2, topo.pus()), topo.pus());
    EXPECT_EQ(unbound.shared_pus, topo.pus()) << name;
    EXPECT_TRUE(unbound.oversubscribed);
    // Core binding wraps the second rank onto the first one's cores: every PU carries two threads.
    const auto bound = assess_pu_sharing(planned_rows(topo, {BindPolicy::core}, 2, topo.cores()), topo.pus());
    EXPECT_EQ(bound.shared_pus, topo.cores() == topo.pus() ? topo.pus() : 0) << name << ": " << bound.summary;
  }
  const auto topo = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/ci-vm-2core.xml");
  const auto sharing = assess_pu_sharing(planned_rows(topo, {BindPolicy::core}, 2, 2), topo.pus());
  EXPECT_EQ(sharing.shared_pus, 2);
  EXPECT_NE(sharing.summary.find("n0: 4 threads of 2 ranks on 2 PUs"), std::string::npos) << sharing.summary;
  EXPECT_NE(sharing.summary.find("PU 0 (rank 0 thread 0, rank 1 thread 0)"), std::string::npos) << sharing.summary;
  // Unbound, 3 threads on 2 PUs: the scheduler can keep only one PU to a single thread.
  EXPECT_EQ(count_shared_pus(planned_rows(topo, {BindPolicy::none}, 3, 1)), 1);
  EXPECT_EQ(count_shared_pus(planned_rows(topo, {BindPolicy::none}, 2, 1)), 0);
}

TEST(Affinity, SharedPuCountFollowsTheBoundSets) {
  // A free thread uses the PU a pinned one leaves; two pinned to one PU share it whatever else runs.
  std::vector<ThreadBinding> rows{row(0, 0, 0, 0, "0", "0"), row(1, 0, 1, 1, "0-1", "")};
  EXPECT_EQ(count_shared_pus(rows), 0);
  rows.push_back(row(2, 0, 0, 0, "0", "0"));
  EXPECT_EQ(count_shared_pus(rows), 1);
  // The same PU number on two machines is two PUs.
  std::vector<ThreadBinding> two_hosts{row(0, 0, 0, 0, "0", "0"), row(1, 0, 0, 0, "0", "0")};
  two_hosts[1].machine = "n1";
  EXPECT_EQ(count_shared_pus(two_hosts), 0);
  // More threads than the machine's PUs is oversubscription even where the sets do not overlap.
  std::vector<ThreadBinding> three{row(0, 0, 0, 0, "0", "0"), row(0, 1, 1, 1, "1", "1"), row(0, 2, 2, 2, "2", "2")};
  EXPECT_FALSE(assess_pu_sharing(three, 3).oversubscribed);
  EXPECT_TRUE(assess_pu_sharing(three, 2).oversubscribed);
  // An SMT core gives two threads two PUs: the core is shared, no PU is.
  const auto smt = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/two-socket-smt.xml");
  EXPECT_EQ(count_shared_pus(planned_rows(smt, {BindPolicy::core}, 2 * smt.cores(), 1)), 0);
  EXPECT_EQ(count_shared_pus(planned_rows(smt, {BindPolicy::core}, 3 * smt.cores(), 1)), smt.cores());
}

TEST(Affinity, SharedPuCountRejectsUnreadableSets) {
  for (const char* bad : {"", "zero", "3-"}) {
    std::vector<ThreadBinding> rows{row(0, 0, 0, 0, bad, "0")};
    try {
      (void)count_shared_pus(rows);
      FAIL() << "bound set '" << bad << "' was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
}

TEST(Affinity, OversubscribeEnvIsValidated) {
  unsetenv("HYMPI_OVERSUBSCRIBE");
  EXPECT_FALSE(oversubscribe_from_env());
  setenv("HYMPI_OVERSUBSCRIBE", "0", 1);
  EXPECT_FALSE(oversubscribe_from_env());
  setenv("HYMPI_OVERSUBSCRIBE", "1", 1);
  EXPECT_TRUE(oversubscribe_from_env());
  setenv("HYMPI_OVERSUBSCRIBE", "yes", 1);
  EXPECT_THROW(oversubscribe_from_env(), InvalidArgument);
  unsetenv("HYMPI_OVERSUBSCRIBE");
}

namespace {
/// Loads `description` as if it were this machine, so hwloc's binding calls act on the real
/// threads while the topology names PUs that do not exist here.
Topology pretend_this_machine(const std::string& description) {
  setenv("HWLOC_THISSYSTEM", "1", 1);
  auto topo = Topology::from_synthetic(description);
  unsetenv("HWLOC_THISSYSTEM");
  return topo;
}
}  // namespace

TEST(Affinity, UnknownPuInsideTheObservingRegionIsATopologyError) {
  // OS indexes 1000+: whatever PU a thread last ran on, locate_pu cannot find it.
  const auto topo = pretend_this_machine("core:2 pu:1(indexes=1000,1001)");
  ASSERT_TRUE(topo.is_this_system());
  const auto plan = plan_binding(topo, {BindPolicy::none, Distribution::compact}, 0, 1, 2);
  try {
    (void)observe_binding(topo, plan, 0, "host", "host");
    FAIL() << "a thread on a PU the topology does not know was accepted";
  } catch (const TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("no PU with OS index"), std::string::npos) << e.what();
  }
}

TEST(Affinity, RefusedThreadBindingInsideTheRegionIsATopologyError) {
  const auto here = Topology::this_machine();
  // PU 0 exists everywhere, PU 1000 nowhere: the process binding succeeds, thread 1's fails.
  const auto topo = pretend_this_machine("core:2 pu:1(indexes=0,1000)");
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  const auto plan = plan_binding(topo, {BindPolicy::core, Distribution::compact}, 0, 1, 2);
  EXPECT_THROW(apply_binding(topo, plan), TopologyError);
  omp_set_num_threads(threads);
  // Undo thread 0's binding to PU 0 so later tests run unbound.
  ASSERT_EQ(hwloc_set_cpubind(here.get(), here.machine_set().get(), HWLOC_CPUBIND_PROCESS), 0);
}
