#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>

#include "hympi/core/affinity.hpp"
#include "hympi/core/environment.hpp"
#include "mpi_world.hpp"
#include "omp_threads.hpp"

// The shared-PU count on this machine's real bindings, gathered across ranks as the app frame
// gathers them. CTest runs these with one thread per rank and mpirun --bind-to none.

namespace {
using hympi::test::World;

// The job's threads on rank 0 after every rank bound `threads` threads as `options` says.
std::vector<hympi::ThreadBinding> bound(const hympi::Topology& topo, const hympi::AffinityOptions& options,
                                        int threads) {
  const World w;
  const hympi::test::Threads team(threads);
  // Undo an earlier test's binding: bind none leaves whatever the process had.
  EXPECT_GE(hwloc_set_cpubind(topo.get(), topo.machine_set().get(), HWLOC_CPUBIND_PROCESS), 0);
  const auto plan = hympi::plan_binding(topo, options, w.rank, w.size, threads);
  hympi::apply_binding(topo, plan);
  const auto mine = hympi::observe_binding(topo, plan, w.rank, "host", "host");
  return hympi::gather_binding(MPI_COMM_WORLD, mine);
}

// n threads spread over p PUs: the PUs beyond the first p threads each double up one PU.
int expected_shared(int threads, int pus) { return std::min(pus, std::max(0, threads - pus)); }
}  // namespace

TEST(Binding, UnboundRanksShareOnlyWhenThereAreMoreThanPus) {
  const World w;
  const auto topo = hympi::Topology::this_machine();
  const auto rows = bound(topo, {hympi::BindPolicy::none}, 1);
  if (w.rank != 0) return;
  const auto sharing = hympi::assess_pu_sharing(rows, topo.pus());
  EXPECT_EQ(sharing.shared_pus, expected_shared(w.size, topo.pus())) << sharing.summary;
  EXPECT_EQ(sharing.oversubscribed, w.size > topo.pus()) << sharing.summary;
}

TEST(Binding, DefaultThreadsUnderCoreBindingShareNoPu) {
  const World w;
  const auto topo = hympi::Topology::this_machine();
  const int threads = hympi::default_threads(topo.cores(), w.size);
  const auto rows = bound(topo, {hympi::BindPolicy::core}, threads);
  if (w.rank != 0) return;
  ASSERT_EQ(static_cast<int>(rows.size()), w.size * threads);
  const auto sharing = hympi::assess_pu_sharing(rows, topo.pus());
  // More ranks than cores wrap round the cores; up to one rank per core nothing is shared.
  if (w.size <= topo.cores()) {
    EXPECT_EQ(sharing.shared_pus, 0) << sharing.summary;
    EXPECT_FALSE(sharing.oversubscribed) << sharing.summary;
    for (std::size_t i = 0; i < rows.size(); ++i)
      for (std::size_t j = i + 1; j < rows.size(); ++j)
        EXPECT_NE(rows[i].pu_os, rows[j].pu_os) << "rank " << rows[i].rank << " and rank " << rows[j].rank;
  } else if (topo.cores() == topo.pus()) {
    EXPECT_EQ(sharing.shared_pus, expected_shared(w.size, topo.pus())) << sharing.summary;
    EXPECT_TRUE(sharing.oversubscribed);
  }
}

TEST(Binding, TwoThreadsPerPuAreAllShared) {
  const World w;
  const auto topo = hympi::Topology::this_machine();
  // Every rank takes all the cores: from two ranks on, every PU of a core carries a thread of each.
  const auto rows = bound(topo, {hympi::BindPolicy::core}, topo.cores());
  if (w.rank != 0) return;
  const auto sharing = hympi::assess_pu_sharing(rows, topo.pus());
  if (topo.cores() != topo.pus()) GTEST_SKIP() << "SMT cores give each thread two PUs";
  EXPECT_EQ(sharing.shared_pus, w.size > 1 ? topo.pus() : 0) << sharing.summary;
  EXPECT_EQ(sharing.oversubscribed, w.size > 1);
}
