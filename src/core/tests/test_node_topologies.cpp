#include <gtest/gtest.h>
#include <mpi.h>

#include <array>
#include <string>
#include <vector>

#include "hympi/core/environment.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/node_topologies.hpp"
#include "hympi/core/topology.hpp"
#include "mpi_world.hpp"

namespace {
struct Expected {
  const char* spec;
  int packages, numa, cores, pus;
};
// Unlike nodes: the same core count split differently, and a node with NUMA domains and two PUs per core.
constexpr std::array<Expected, 3> kUnlike = {{{"synthetic:pack:2 core:4 pu:1", 2, 1, 8, 8},
                                             {"synthetic:pack:1 core:8 pu:1", 1, 1, 8, 8},
                                             {"synthetic:pack:1 numa:2 core:3 pu:2", 1, 2, 6, 12}}};

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
    const Expected& want = kUnlike.at(static_cast<std::size_t>(k));
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
  EXPECT_NE(hympi::Topology::from_xml_text(all[0].xml).hash(), hympi::Topology::from_xml_text(all[1].xml).hash());
}

TEST(NodeTopologies, NodesOfSeveralRanksSendOnce) {
  const hympi::test::World world;
  const hympi::NodeMap nodes(MPI_COMM_WORLD, 2);  // 3 ranks: nodes of 2 and 1 ranks
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
