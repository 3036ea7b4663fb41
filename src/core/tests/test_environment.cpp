#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "hympi/core/affinity.hpp"
#include "hympi/core/comm.hpp"
#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/node_topologies.hpp"
#include "hympi/core/topology.hpp"
#include "mpi_world.hpp"

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

TEST(Environment, BindingGatherCoversEveryRank) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const auto topo = hympi::Topology::this_machine();
  const auto plan = hympi::plan_binding(topo, {hympi::BindPolicy::none, hympi::Distribution::compact}, rank, size, 1);
  const auto mine = hympi::observe_binding(topo, plan, rank, "host", "host");
  const auto all = hympi::gather_binding(MPI_COMM_WORLD, mine);
  if (rank == 0) {
    std::set<int> ranks;
    for (const auto& r : all) ranks.insert(r.rank);
    EXPECT_EQ(static_cast<int>(ranks.size()), size);
    const hympi::Bitmap pus = topo.machine_set();
    for (const auto& r : all) EXPECT_TRUE(r.pu_os >= 0 && pus.contains(static_cast<unsigned>(r.pu_os))) << r.pu_os;
  } else {
    EXPECT_TRUE(all.empty());
  }
}

namespace {

using hympi::test::World;

/// Where rank `r` of `size` lands when machines are rank parity classes and each machine is cut
/// into `virtual_nodes` blocks: written from the definition (nodes numbered by their lowest rank),
/// not from NodeMap's collectives.
struct Expected {
  int machine_rank, machine_size, node_rank, node_size, node_id, num_nodes;
};

Expected expected_by_parity(int r, int size, int virtual_nodes) {
  // node_of[q]: (machine, block) of rank q.
  std::vector<std::pair<int, int>> node_of(static_cast<std::size_t>(size));
  for (int q = 0; q < size; ++q) {
    const int machine_size = (size - q % 2 + 1) / 2;
    const int parts = std::min(virtual_nodes, machine_size);
    node_of[static_cast<std::size_t>(q)] = {q % 2, (q / 2) * parts / machine_size};
  }
  Expected e{r / 2, (size - r % 2 + 1) / 2, 0, 0, 0, 0};
  std::vector<std::pair<int, int>> order;  // nodes in order of their lowest rank
  for (int q = 0; q < size; ++q) {
    const auto node = node_of[static_cast<std::size_t>(q)];
    if (std::find(order.begin(), order.end(), node) == order.end()) order.push_back(node);
    if (node == node_of[static_cast<std::size_t>(r)]) {
      if (q < r) ++e.node_rank;
      ++e.node_size;
    }
  }
  e.num_nodes = static_cast<int>(order.size());
  const auto mine = std::find(order.begin(), order.end(), node_of[static_cast<std::size_t>(r)]);
  e.node_id = static_cast<int>(mine - order.begin());
  return e;
}

}  // namespace

TEST(NodeMap, OneMachineIsOneNodePerVirtualNode) {
  const World w;
  const hympi::NodeMap one(MPI_COMM_WORLD, 1);
  EXPECT_EQ(one.num_nodes(), 1);
  EXPECT_EQ(one.node_id(), 0);
  EXPECT_EQ(one.node_size(), w.size);
  EXPECT_EQ(one.node_rank(), w.rank);
  EXPECT_EQ(one.machine_size(), w.size);
  // More virtual nodes than ranks: one rank per node, numbered like the ranks.
  const hympi::NodeMap each(MPI_COMM_WORLD, w.size + 1);
  EXPECT_EQ(each.num_nodes(), w.size);
  EXPECT_EQ(each.node_id(), w.rank);
  EXPECT_EQ(each.node_size(), 1);
  EXPECT_EQ(each.nodes_on_machine(), w.size);
  EXPECT_EQ(each.node_on_machine(), w.rank);
  EXPECT_THROW(hympi::NodeMap(MPI_COMM_WORLD, 0), hympi::InvalidArgument);
}

TEST(NodeMap, PretendMachinesByRankParity) {
  const World w;
  MPI_Comm parity = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, w.rank % 2, w.rank, &parity), MPI_SUCCESS);
  const hympi::Comm machine(parity);
  for (int virtual_nodes : {1, 2, 3}) {
    const hympi::NodeMap map(MPI_COMM_WORLD, virtual_nodes, machine.get());
    const Expected e = expected_by_parity(w.rank, w.size, virtual_nodes);
    SCOPED_TRACE("virtual nodes " + std::to_string(virtual_nodes) + ", rank " + std::to_string(w.rank));
    EXPECT_EQ(map.machine_rank(), e.machine_rank);
    EXPECT_EQ(map.machine_size(), e.machine_size);
    EXPECT_EQ(map.node_rank(), e.node_rank);
    EXPECT_EQ(map.node_size(), e.node_size);
    EXPECT_EQ(map.node_id(), e.node_id);
    EXPECT_EQ(map.num_nodes(), e.num_nodes);
    EXPECT_EQ(map.node().size(), e.node_size);
  }
  // The definition above at four ranks, by hand: machines {0,2} and {1,3}.
  if (w.size == 4) {
    const hympi::NodeMap two(MPI_COMM_WORLD, 1, machine.get());
    EXPECT_EQ(two.num_nodes(), 2);
    EXPECT_EQ(two.node_id(), w.rank % 2);
    const hympi::NodeMap four(MPI_COMM_WORLD, 2, machine.get());
    EXPECT_EQ(four.num_nodes(), 4);
    EXPECT_EQ(four.node_id(), w.rank);
  }
}

TEST(NodeMap, DiscoversNodesWithinASubCommunicator) {
  const World w;
  // Two halves of the job each discover their own nodes; neither sees the other's ranks.
  const int half = w.rank < (w.size + 1) / 2 ? 0 : 1;
  MPI_Comm part = MPI_COMM_NULL;
  ASSERT_EQ(MPI_Comm_split(MPI_COMM_WORLD, half, w.rank, &part), MPI_SUCCESS);
  const hympi::Comm comm(part);
  const int size = comm.size();
  const hympi::NodeMap map(comm.get(), size);
  EXPECT_EQ(map.machine_size(), size);
  EXPECT_EQ(map.num_nodes(), size);
  EXPECT_EQ(map.node_id(), comm.rank());
  const hympi::NodeMap one(comm.get(), 1);
  EXPECT_EQ(one.num_nodes(), 1);
  EXPECT_EQ(one.node_size(), size);
}

// ---- gather_node_topologies: every (virtual) node's own topology on rank 0 ------------------------------------
namespace {
struct ExpectedNode {
  const char* spec;
  int packages, numa, cores, pus;
};
// Unlike nodes: the same core count split differently, and a node with NUMA domains and two PUs per core.
constexpr std::array<ExpectedNode, 4> kUnlike = {{{"synthetic:pack:2 core:4 pu:1", 2, 1, 8, 8},
                                             {"synthetic:pack:1 core:8 pu:1", 1, 1, 8, 8},
                                             {"synthetic:pack:1 numa:2 core:3 pu:2", 1, 2, 6, 12},
                                             {"synthetic:pack:4 core:1 pu:1", 4, 1, 4, 4}}};

std::string host_of(int rank) { return "host" + std::to_string(rank); }
}  // namespace

TEST(NodeTopologies, SpecListIsParsed) {
  EXPECT_TRUE(hympi::parse_node_topology_specs("").empty());
  EXPECT_TRUE(hympi::parse_node_topology_specs("  ").empty());
  const auto specs = hympi::parse_node_topology_specs(" synthetic:pack:2 core:2 ; this;nodes/a.xml ");
  ASSERT_EQ(specs.size(), 3u);
  EXPECT_EQ(specs[0], "synthetic:pack:2 core:2");
  EXPECT_EQ(specs[1], "this");
  EXPECT_EQ(specs[2], "nodes/a.xml");
  EXPECT_THROW((void)hympi::parse_node_topology_specs("this;;this"), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::parse_node_topology_specs("this;"), hympi::InvalidArgument);
}

TEST(NodeTopologies, OneSpecServesEveryNodeOtherwiseOnePerNode) {
  const std::vector<std::string> none, one = {"synthetic:core:2"}, two = {"synthetic:core:2", "this"};
  EXPECT_EQ(hympi::node_topology_spec(none, 2, 3), "this");
  EXPECT_EQ(hympi::node_topology_spec(one, 2, 3), "synthetic:core:2");
  EXPECT_EQ(hympi::node_topology_spec(two, 1, 2), "this");
  EXPECT_THROW((void)hympi::node_topology_spec(two, 1, 3), hympi::InvalidArgument);
}

TEST(NodeTopologies, RankZeroGetsEveryUnlikeVirtualNode) {
  const hympi::test::World world;
  const hympi::NodeMap nodes(MPI_COMM_WORLD, world.size);  // one virtual node per rank
  ASSERT_EQ(nodes.num_nodes(), world.size);
  std::vector<std::string> specs;
  for (int k = 0; k < world.size; ++k) specs.emplace_back(kUnlike.at(static_cast<std::size_t>(k)).spec);
  const auto all = hympi::gather_node_topologies(MPI_COMM_WORLD, nodes, host_of(world.rank), specs);
  if (world.rank != 0) {
    EXPECT_TRUE(all.empty());
    return;
  }
  ASSERT_EQ(static_cast<int>(all.size()), world.size);
  for (int k = 0; k < world.size; ++k) {
    const ExpectedNode& want = kUnlike.at(static_cast<std::size_t>(k));
    const hympi::NodeTopology& got = all[static_cast<std::size_t>(k)];
    EXPECT_EQ(got.node, k);
    EXPECT_EQ(got.host, host_of(k));  // node k's leader is rank k
    EXPECT_EQ(got.ranks, 1);
    EXPECT_EQ(got.source, want.spec);
    const auto parsed = hympi::Topology::from_xml_text(got.xml);
    EXPECT_EQ(parsed.packages(), want.packages) << want.spec;
    EXPECT_EQ(parsed.numa_nodes(), want.numa) << want.spec;
    EXPECT_EQ(parsed.cores(), want.cores) << want.spec;
    EXPECT_EQ(parsed.pus(), want.pus) << want.spec;
    EXPECT_EQ(parsed.hash(), hympi::Topology::from_spec(want.spec).hash()) << want.spec;
  }
  if (world.size > 1) {
    EXPECT_NE(hympi::Topology::from_xml_text(all[0].xml).hash(), hympi::Topology::from_xml_text(all[1].xml).hash());
  }
}

TEST(NodeTopologies, NodesOfSeveralRanksSendOnce) {
  const hympi::test::World world;
  if (world.size < 3) GTEST_SKIP() << "needs a node of several ranks";
  const hympi::NodeMap nodes(MPI_COMM_WORLD, 2);  // 3 ranks: nodes of 2 and 1 ranks; 4 ranks: 2 and 2
  const std::vector<std::string> specs = {kUnlike[0].spec, kUnlike[2].spec};
  const auto all = hympi::gather_node_topologies(MPI_COMM_WORLD, nodes, host_of(world.rank), specs);
  if (world.rank != 0) return;
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].ranks + all[1].ranks, world.size);
  EXPECT_EQ(all[0].ranks, (world.size + 1) / 2);
  EXPECT_EQ(all[0].host, host_of(0));
  EXPECT_EQ(all[1].host, host_of(all[0].ranks));  // the second node's lowest rank leads it
  EXPECT_EQ(hympi::Topology::from_xml_text(all[1].xml).pus(), kUnlike[2].pus);
}

TEST(NodeTopologies, RealNodeRoundTripsToItsOwnHash) {
  const hympi::test::World world;
  const hympi::NodeMap nodes(MPI_COMM_WORLD, 1);
  const auto all = hympi::gather_node_topologies(MPI_COMM_WORLD, nodes, host_of(world.rank), {});
  if (world.rank != 0) return;
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].source, "this");
  EXPECT_EQ(all[0].ranks, world.size);
  const auto machine = hympi::Topology::from_spec("this");  // what hympi-info reports
  const auto parsed = hympi::Topology::from_xml_text(all[0].xml);
  EXPECT_EQ(parsed.hash(), machine.hash());
  EXPECT_EQ(parsed.cores(), machine.cores());
  EXPECT_FALSE(parsed.is_this_system());
}

TEST(NodeTopologies, ABadSpecOnOneNodeFailsEveryRank) {
  const hympi::test::World world;
  const hympi::NodeMap nodes(MPI_COMM_WORLD, world.size);
  std::vector<std::string> specs(static_cast<std::size_t>(world.size), kUnlike[0].spec);
  specs.back() = "synthetic:pack:2 bogus:3";
  try {
    (void)hympi::gather_node_topologies(MPI_COMM_WORLD, nodes, host_of(world.rank), specs);
    FAIL() << "a bad spec was accepted";
  } catch (const hympi::InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("node " + std::to_string(world.size - 1)), std::string::npos) << what;
    if (world.rank == 0) {
      EXPECT_NE(what.find("bogus"), std::string::npos) << what;
    }
  }
  specs.emplace_back("this");  // one more spec than nodes
  EXPECT_THROW((void)hympi::gather_node_topologies(MPI_COMM_WORLD, nodes, host_of(world.rank), specs),
               hympi::InvalidArgument);
}
