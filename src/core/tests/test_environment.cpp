#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <set>

#include "hympi/core/affinity.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"

// The Environment owns MPI_Init/Finalize; the MPI test main already initialised MPI, so these
// tests exercise the pieces that do not re-initialise: node splitting logic and errors.

TEST(Environment, VirtualNodesEnvIsValidated) {
  setenv("HYMPI_VIRTUAL_NODES", "3", 1);
  EXPECT_EQ(hympi::virtual_nodes_from_env(), 3);
  setenv("HYMPI_VIRTUAL_NODES", "0", 1);
  EXPECT_THROW(hympi::virtual_nodes_from_env(), hympi::InvalidArgument);
  setenv("HYMPI_VIRTUAL_NODES", "2x", 1);
  EXPECT_THROW(hympi::virtual_nodes_from_env(), hympi::InvalidArgument);
  unsetenv("HYMPI_VIRTUAL_NODES");
  EXPECT_EQ(hympi::virtual_nodes_from_env(), 1);
}

TEST(Environment, ThreadLevelNames) {
  EXPECT_EQ(hympi::parse_thread_level("multiple"), hympi::ThreadLevel::multiple);
  EXPECT_EQ(hympi::to_string(hympi::ThreadLevel::funneled), "funneled");
  EXPECT_THROW(hympi::parse_thread_level("full"), hympi::InvalidArgument);
}

TEST(Environment, MpiErrorsBecomeExceptions) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int value = 0;
  try {
    HYMPI_MPI(MPI_Send(&value, 1, MPI_INT, 1 << 20, 0, MPI_COMM_WORLD));
    FAIL() << "invalid destination rank was accepted";
  } catch (const hympi::MpiError& e) {
    EXPECT_NE(e.code(), MPI_SUCCESS);
    EXPECT_NE(std::string(e.what()).find("MPI_Send"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("rank " + std::to_string(rank)), std::string::npos);
  }
}

TEST(Environment, PlacementGatherCoversEveryRank) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto topo = hympi::Topology::this_machine();
  const auto plan = hympi::plan_placement(topo, {hympi::BindPolicy::none, hympi::Distribution::compact}, rank, size, 1);
  const auto mine = hympi::observe_placement(topo, plan, rank, "host", "host");
  const auto all = hympi::gather_placement(MPI_COMM_WORLD, mine);
  if (rank == 0) {
    std::set<int> ranks;
    for (const auto& r : all) ranks.insert(r.rank);
    EXPECT_EQ(static_cast<int>(ranks.size()), size);
    for (const auto& r : all) EXPECT_GE(r.pu_os, 0);
  } else {
    EXPECT_TRUE(all.empty());
  }
}
