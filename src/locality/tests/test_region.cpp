// Regions on locations: the thread mapping, wrap-around, inheritance, tasks on locations, errors,
// and the binding check (logic on synthetic machines, the real thing on this one).
#include <gtest/gtest.h>
#include <omp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/locality/region.hpp"
#include "synthetic_machine.hpp"

using hympi::InvalidArgument;
using hympi::Topology;
using namespace hympi::locality;

namespace {

/// Allows nested teams for one test, and puts the old limit back.
class NestingAllowed {
 public:
  NestingAllowed() : old_(omp_get_max_active_levels()) { omp_set_max_active_levels(2); }
  ~NestingAllowed() { omp_set_max_active_levels(old_); }
  NestingAllowed(const NestingAllowed&) = delete;
  NestingAllowed& operator=(const NestingAllowed&) = delete;

 private:
  int old_;
};


}  // namespace

TEST(Region, SixteenThreadsOverFourLocationsAreBlocks) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const auto plan = plan_threads(locs, {0, 3}, 16);
  for (int t = 0; t < 16; ++t) EXPECT_EQ(plan[static_cast<std::size_t>(t)], t / 4) << "thread " << t;
  // Uneven: the first locations get one more thread; fewer threads than locations leave the last empty.
  EXPECT_EQ(plan_threads(locs, {0, 3}, 6), (std::vector<int>{0, 0, 1, 1, 2, 3}));
  EXPECT_EQ(plan_threads(locs, {0, 3}, 2), (std::vector<int>{0, 1}));
  EXPECT_EQ(plan_threads(locs, LocationRange::single(2), 3), (std::vector<int>{2, 2, 2}));
}

TEST(Region, OutOfRangeLocationsWrap) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  EXPECT_EQ(plan_threads(locs, {2, 5}, 4), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(plan_threads(locs, {-1, 0}, 2), (std::vector<int>{3, 0}));
  EXPECT_EQ(plan_threads(locs, {0, 7}, 8), (std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_EQ(plan_threads(locs, LocationRange::single(9), 2), (std::vector<int>{1, 1}));
}

TEST(Region, BadRegionsThrow) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  EXPECT_THROW((void)plan_threads(locs, {3, 1}, 4), InvalidArgument);
  EXPECT_THROW((void)plan_threads(locs, {0, 3}, 0), InvalidArgument);
  bool ran = false;
  EXPECT_THROW(parallel(locs, {0, 3}, 0, [&](Here&) { ran = true; }), InvalidArgument);
  EXPECT_THROW(parallel(locs, {1, 0}, 2, [&](Here&) { ran = true; }), InvalidArgument);
  EXPECT_FALSE(ran);
}

TEST(Region, ThreadsSitWhereThePlanSays) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  for (const LocationRange range : {LocationRange{0, 3}, LocationRange{6, 9}, LocationRange{1, 1}}) {
    const int n = 8;
    std::vector<int> seen(n, -1), rank(n, -1), per(n, -1), ids(n, -1);
    int team = 0;
    parallel(locs, range, n, [&](Here& here) {
      const auto t = static_cast<std::size_t>(here.thread());
      seen[t] = here.location();
      rank[t] = here.rank_in_location();
      per[t] = here.threads_in_location();
      ids[t] = omp_get_thread_num();
      if (here.thread() == 0) team = here.num_threads();
      // Synthetic machine: nothing bound, the intended set is still the location's.
      EXPECT_EQ(here.binding().intended, locs.at(here.location()).cpuset.to_list());
      EXPECT_TRUE(here.binding().bound.empty());
      EXPECT_EQ(here.depth(), 1);
    });
    ASSERT_EQ(team, n);
    const auto plan = plan_threads(locs, range, n);
    for (int t = 0; t < n; ++t) {
      const auto i = static_cast<std::size_t>(t);
      EXPECT_EQ(seen[i], plan[i]) << range.to_string() << " thread " << t;
      EXPECT_EQ(ids[i], t);
      int before = 0, same = 0;
      for (int u = 0; u < n; ++u) {
        same += plan[static_cast<std::size_t>(u)] == plan[i];
        before += u < t && plan[static_cast<std::size_t>(u)] == plan[i];
      }
      EXPECT_EQ(rank[i], before);
      EXPECT_EQ(per[i], same);
    }
  }
}

TEST(Region, NoRangeMeansEveryLocation) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::package);
  std::vector<int> seen(4, -1);
  parallel(locs, 4, [&](Here& here) { seen[static_cast<std::size_t>(here.thread())] = here.location(); });
  EXPECT_EQ(seen, (std::vector<int>{0, 0, 1, 1}));
}

TEST(Region, NestedRegionsInheritTheParentsLocation) {
  const NestingAllowed nesting;
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::mutex m;
  std::vector<std::pair<int, int>> pairs;  // (parent location, nested thread's location)
  int nested_team = 0;
  parallel(locs, {0, 3}, 4, [&](Here& outer) {
    outer.parallel(3, [&](Here& inner) {
      const std::lock_guard lock(m);
      pairs.emplace_back(outer.location(), inner.location());
      nested_team = inner.num_threads();
      EXPECT_EQ(inner.depth(), 2);
      EXPECT_EQ(inner.range().first, outer.location());
      EXPECT_EQ(inner.range().last, outer.location());
    });
  });
  ASSERT_EQ(nested_team, 3);
  ASSERT_EQ(pairs.size(), 12u);
  for (const auto& [parent, child] : pairs) EXPECT_EQ(child, parent);
}

TEST(Region, NestedRegionsThatNameARangeUseIt) {
  const NestingAllowed nesting;
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::vector<int> seen(4, -1);
  parallel(locs, LocationRange::single(0), 1, [&](Here& outer) {
    outer.parallel({2, 5}, 4, [&](Here& inner) { seen[static_cast<std::size_t>(inner.thread())] = inner.location(); });
  });
  EXPECT_EQ(seen, (std::vector<int>{2, 3, 0, 1}));
}

TEST(Region, NestedRegionWithoutNestingStillInherits) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::atomic<int> checked{0};
  parallel(locs, {0, 3}, 4, [&](Here& outer) {
    outer.parallel(4, [&](Here& inner) {
      if (inner.location() == outer.location()) ++checked;
    });
  });
  // OpenMP's default allows one active level: each nested team has one thread, on its parent's location.
  EXPECT_GE(checked.load(), 4);
}

TEST(Region, TasksRunOnThreadsOfTheirLocation) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const int n = 8;
  const auto plan = plan_threads(locs, {0, 3}, n);
  constexpr int kTasks = 64;
  std::vector<int> ran_by(kTasks, -1), ran_at(kTasks, -1);
  parallel(locs, {0, 3}, n, [&](Here& here) {
    if (here.thread() != 0) return;  // one producer: everything else is the queues' doing
    for (int i = 0; i < kTasks; ++i)
      here.task_on(i, [&, i](Here& worker) {
        ran_by[static_cast<std::size_t>(i)] = omp_get_thread_num();
        ran_at[static_cast<std::size_t>(i)] = worker.location();
      });
  });
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_GE(ran_by[static_cast<std::size_t>(i)], 0) << "task " << i << " never ran";
    // The OpenMP thread that ran it, looked up in the plan: the location really is i mod 4.
    EXPECT_EQ(plan[static_cast<std::size_t>(ran_by[static_cast<std::size_t>(i)])], i % 4) << "task " << i;
    EXPECT_EQ(ran_at[static_cast<std::size_t>(i)], i % 4);
  }
}

TEST(Region, ChildTasksInheritTheirParentsLocation) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::atomic<int> child_at{-1}, grandchild_at{-1}, named_at{-1};
  parallel(locs, {0, 3}, 4, [&](Here& here) {
    if (here.thread() != 0) return;
    here.task_on(-2, [&](Here& parent) {  // -2 wraps to 2
      parent.task([&](Here& child) {
        child_at = child.location();
        child.task([&](Here& grandchild) { grandchild_at = grandchild.location(); });
      });
      parent.task_on(1, [&](Here& other) { named_at = other.location(); });  // a named location wins
    });
  });
  EXPECT_EQ(child_at.load(), 2);
  EXPECT_EQ(grandchild_at.load(), 2);
  EXPECT_EQ(named_at.load(), 1);
}

TEST(Region, TasksMayBeMoveOnly) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::atomic<int> sum{0};
  parallel(locs, 4, [&](Here& here) {
    auto value = std::make_unique<int>(here.thread() + 1);
    here.task_on(here.thread() + 1, [&sum, v = std::move(value)] { sum += *v; });
  });
  EXPECT_EQ(sum.load(), 1 + 2 + 3 + 4);
}

TEST(Region, BarrierWaitsForEveryTask) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::atomic<int> done{0};
  std::atomic<int> wrong{0};
  parallel(locs, {0, 3}, 8, [&](Here& here) {
    for (int round = 1; round <= 3; ++round) {
      for (int i = 0; i < 4; ++i) here.task_on(i, [&] { ++done; });
      here.barrier();
      if (done.load() != round * 8 * 4) ++wrong;
      here.barrier();  // nobody queues the next round before all have looked
    }
  });
  EXPECT_EQ(done.load(), 96);
  EXPECT_EQ(wrong.load(), 0);
}

TEST(Region, NestedTasksForOtherLocationsGoToTheParentRegion) {
  const NestingAllowed nesting;
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const auto plan = plan_threads(locs, {0, 3}, 4);
  std::atomic<int> ran_by{-1}, ran_at{-1};
  parallel(locs, {0, 3}, 4, [&](Here& outer) {
    if (outer.location() != 1) return;
    outer.parallel(2, [&](Here& inner) {  // inherits location 1 only
      if (inner.thread() == 0)
        inner.task_on(3, [&](Here& worker) {
          ran_by = omp_get_thread_num();  // a thread of the outer team
          ran_at = worker.location();
          EXPECT_EQ(worker.depth(), 1);
        });
    });
  });
  EXPECT_EQ(ran_at.load(), 3);
  ASSERT_GE(ran_by.load(), 0);
  EXPECT_EQ(plan[static_cast<std::size_t>(ran_by.load())], 3);
}

TEST(Region, TaskOnALocationWithoutThreadsThrows) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  bool ran = false;
  try {
    parallel(locs, {0, 3}, 2, [&](Here& here) {  // threads on locations 0 and 1 only
      if (here.thread() == 0) here.task_on(3, [&] { ran = true; });
    });
    FAIL() << "a task for an empty location was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "no thread of this region or its parents runs on location 3 (region 0:3, 2 threads)");
  }
  EXPECT_FALSE(ran);
}

TEST(Region, ExceptionsLeaveTheRegionNotTheProcess) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  std::atomic<int> finished{0};
  EXPECT_THROW(parallel(locs, {0, 3}, 4,
                        [&](Here& here) {
                          if (here.thread() == 3) throw std::runtime_error("body failed");
                          ++finished;
                        }),
               std::runtime_error);
  EXPECT_EQ(finished.load(), 3);
  try {
    parallel(locs, {0, 3}, 4, [&](Here& here) {
      if (here.thread() == 0) here.task_on(2, [] { throw InvalidArgument("task failed"); });
    });
    FAIL() << "the task's exception was lost";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "task failed");
  }
  EXPECT_THROW(parallel(locs, {0, 3}, 2,
                        [&](Here& here) {
                          if (here.thread() == 0) here.task([](Here& worker) { worker.barrier(); });
                        }),
               InvalidArgument);
}

TEST(Region, BindingCheckLogic) {
  const auto row = [](std::string intended, std::string bound, int pu) {
    return LocatedThread{1, 2, std::move(intended), std::move(bound), pu};
  };
  const std::vector<LocatedThread> good{row("16-23", "16-23", 17), row("0-7", "0,1,2,3,4,5,6,7", 0),
                                        row("8-15", "", -1)};
  EXPECT_TRUE(check_thread_binding(good).empty());
  const std::vector<LocatedThread> bad{row("16-23", "16-19", 17), row("16-23", "16-23", 3)};
  const auto problems = check_thread_binding(bad);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_EQ(problems[0], "thread 1 of location 2 is bound to 16-19 but was meant for 16-23");
  EXPECT_EQ(problems[1], "thread 1 of location 2 runs on PU 3, outside its set 16-23");
  const std::vector<LocatedThread> garbled{row("16-23", "sixteen", 17)};
  EXPECT_THROW((void)check_thread_binding(garbled), InvalidArgument);
}

TEST(Region, IntendedSetsOnASyntheticMachine) {
  // Which cpuset each thread should get: 8 threads over the two packages' halves.
  const auto locs = Locations::by_count(hympi::test::four_numa_machine(), 2);
  std::vector<std::string> intended(8);
  parallel(locs, 8, [&](Here& here) { intended[static_cast<std::size_t>(here.thread())] = here.binding().intended; });
  for (int t = 0; t < 8; ++t) EXPECT_EQ(intended[static_cast<std::size_t>(t)], t < 4 ? "0-15" : "16-31");
}

TEST(Region, ThreadsAreBoundOnThisMachineAndGetTheirBindingBack) {
  const auto topo = Topology::this_machine();
  const auto locs = Locations::by_count(topo, std::min(2, topo.pus()));
  hympi::Bitmap before, after;
  ASSERT_EQ(hwloc_get_cpubind(topo.get(), before.get(), HWLOC_CPUBIND_THREAD), 0);
  std::vector<LocatedThread> rows(static_cast<std::size_t>(2 * locs.size()));
  parallel(locs, 2 * locs.size(), [&](Here& here) { rows[static_cast<std::size_t>(here.thread())] = here.binding(); });
  for (const LocatedThread& r : rows) {
    EXPECT_EQ(r.bound, locs.at(r.location).cpuset.to_list()) << "thread " << r.thread;
    EXPECT_TRUE(locs.at(r.location).cpuset.contains(static_cast<unsigned>(r.pu_os))) << "thread " << r.thread;
  }
  EXPECT_TRUE(check_thread_binding(rows).empty());
  ASSERT_EQ(hwloc_get_cpubind(topo.get(), after.get(), HWLOC_CPUBIND_THREAD), 0);
  EXPECT_EQ(after.to_list(), before.to_list());
}

TEST(Region, ATeamBindingMapsLikeARegionAndDoesNothingOffThisMachine) {
  const auto locs = Locations::by_level(hympi::test::four_numa_machine(), LocationLevel::numa);
  const TeamBinding team(locs, {0, 3}, 6);
  EXPECT_EQ(team.plan(), (std::vector<int>{0, 0, 1, 1, 2, 3}));  // as plan_threads
  EXPECT_EQ(team.rows()[4].intended, locs.at(2).cpuset.to_list());
  EXPECT_TRUE(team.rows()[4].bound.empty());  // nothing bound on a synthetic machine
  EXPECT_NO_THROW(team.check());
  EXPECT_THROW(TeamBinding(locs, {0, 3}, 0), InvalidArgument);
}

TEST(Region, ATeamBindingHoldsForLaterTeamsAndIsUndone) {
  const auto topo = Topology::this_machine();
  const auto locs = Locations::by_count(topo, std::min(2, topo.pus()));
  const int n = 2;
  const auto bindings = [&] {
    std::vector<std::string> out(static_cast<std::size_t>(n));
#pragma omp parallel num_threads(n)
    {
      hympi::Bitmap set;
      (void)hwloc_get_cpubind(topo.get(), set.get(), HWLOC_CPUBIND_THREAD);
      out[static_cast<std::size_t>(omp_get_thread_num())] = set.to_list();
    }
    return out;
  };
  const auto before = bindings();
  {
    const TeamBinding team(locs, locs.everywhere(), n);
    const auto during = bindings();  // a later, plain team: the same threads, still on their locations
    for (int t = 0; t < n; ++t) {
      hympi::Bitmap set;
      ASSERT_EQ(hwloc_bitmap_list_sscanf(set.get(), during[static_cast<std::size_t>(t)].c_str()), 0);
      EXPECT_TRUE(locs.at(team.plan()[static_cast<std::size_t>(t)]).cpuset.includes(set)) << "thread " << t;
    }
    EXPECT_NO_THROW(team.check());
    if (locs.size() >= 2) {
      // Someone moves thread 1 to location 0: the check names it.
#pragma omp parallel num_threads(n)
      if (omp_get_thread_num() == 1)
        (void)hwloc_set_cpubind(topo.get(), locs.at(0).cpuset.get(), HWLOC_CPUBIND_THREAD);
      try {
        team.check();
        ADD_FAILURE() << "check() missed a thread outside its location";
      } catch (const hympi::TopologyError& e) {
        EXPECT_NE(std::string(e.what()).find("thread 1 of location 1"), std::string::npos) << e.what();
      }
    }
  }
  EXPECT_EQ(bindings(), before);  // every thread got its binding back
}
