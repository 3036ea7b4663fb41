#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "hympi/core/error.hpp"
#include "hympi/core/topology.hpp"

using hympi::Topology;

TEST(Topology, SyntheticCounts) {
  const auto t = Topology::from_synthetic("pack:2 numa:2 core:4 pu:2");
  EXPECT_EQ(t.packages(), 2);
  EXPECT_EQ(t.numa_nodes(), 4);
  EXPECT_EQ(t.cores(), 16);
  EXPECT_EQ(t.pus(), 32);
  EXPECT_FALSE(t.is_this_system());
  EXPECT_EQ(t.core_set(3).weight(), 2);
  EXPECT_EQ(t.numa_set(1).weight(), 8);
  EXPECT_EQ(t.package_set(1).weight(), 16);
  EXPECT_EQ(t.package_of_core(9), 1);
}

TEST(Topology, SyntheticCaches) {
  const auto t = Topology::from_synthetic("pack:2 l3:1 core:4 l1d:1 pu:1");
  const auto caches = t.caches();
  ASSERT_EQ(caches.size(), 2u);
  EXPECT_EQ(caches[0].level, 1);
  EXPECT_EQ(caches[0].count, 8);
  EXPECT_EQ(caches[1].level, 3);
  EXPECT_EQ(caches[1].count, 2);
  EXPECT_EQ(t.last_level_cache_bytes(), 2 * caches[1].size_bytes);
}

TEST(Topology, LocatePu) {
  const auto t = Topology::from_synthetic("pack:2 numa:2 core:2 pu:2");
  // PU 13 = package 1, second NUMA domain of it (numa 3), core 6, second PU of that core.
  const auto loc = t.locate_pu(13);
  EXPECT_EQ(loc.package, 1);
  EXPECT_EQ(loc.numa, 3);
  EXPECT_EQ(loc.core, 6);
  EXPECT_EQ(loc.pu, 13);
  EXPECT_THROW((void)t.locate_pu(64), hympi::TopologyError);
}

TEST(Topology, XmlRoundTripKeepsShapeAndHash) {
  const auto t = Topology::from_synthetic("pack:2 numa:1 core:3 pu:2");
  const std::string path = testing::TempDir() + "hympi_topo.xml";
  std::ofstream(path) << t.to_xml();
  const auto u = Topology::from_spec(path);
  EXPECT_EQ(u.cores(), 6);
  EXPECT_EQ(u.pus(), 12);
  EXPECT_EQ(u.hash(), t.hash());
  std::remove(path.c_str());
  EXPECT_NE(Topology::from_synthetic("pack:1 core:6 pu:2").hash(), t.hash());
}

TEST(Topology, RecordedMachine) {
  const auto t = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/dual-epyc-like.xml");
  EXPECT_EQ(t.packages(), 2);
  EXPECT_EQ(t.numa_nodes(), 8);
  EXPECT_EQ(t.cores(), 64);
}

TEST(Topology, BadSourcesThrow) {
  EXPECT_THROW(Topology::from_synthetic("pack:two"), hympi::TopologyError);
  EXPECT_THROW(Topology::from_spec("/nonexistent/topology.xml"), hympi::TopologyError);
  const auto t = Topology::from_synthetic("pack:1 core:2 pu:1");
  EXPECT_THROW((void)t.core_set(2), hympi::InvalidArgument);
}

/// The PUs a synthetic description past hympi's limit was counted to, read from the refusal ("" when it was not
/// refused before hwloc built it).
std::string refused_pus(const std::string& description) {
  try {
    (void)Topology::from_synthetic(description);
  } catch (const hympi::TopologyError& error) {
    const std::string text = error.what();
    const auto at = text.find("' has ");
    return at == std::string::npos ? text : text.substr(at + 6, text.find(" PUs") - at - 6);
  }
  return "";
}

TEST(Topology, ASyntheticMachinePastTheLimitIsRefusedBeforeHwlocBuildsIt) {
  // Every form of hwloc's syntax: types named or not (hwloc's older "2 4 2", which the count once read as 1 PU and
  // hwloc then built for minutes), attributes and attached memory, which add no PU.
  EXPECT_EQ(refused_pus("pack:2 numa:2 core:4096 pu:2"), "32768");
  EXPECT_EQ(refused_pus("Package:2(memory=1GB) L3Cache:1 Core:4096 PU:2"), "16384");
  EXPECT_EQ(refused_pus("pack:2 [numa] core:3000 pu:1"), "6000");
  EXPECT_EQ(refused_pus("2 4 4096"), "32768");
  EXPECT_EQ(refused_pus("100 100 100 100"), "100000000");
  EXPECT_EQ(refused_pus("pack:99999999999999999999999 pu:2"), "over 10^18");
  EXPECT_EQ(refused_pus("pack:2 core:2048 pu:1"), "");  // at the limit: built
}

TEST(Topology, AnXmlPathThatIsNoFileThrowsWithoutReadingIt) {
  // hwloc would block reading a FIFO until someone writes to it; the test would hang instead of failing.
  const std::string fifo = testing::TempDir() + "hympi_topo.fifo";
  std::remove(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  try {
    (void)Topology::from_spec(fifo);
    ADD_FAILURE() << "a FIFO was taken for hwloc XML";
  } catch (const hympi::TopologyError& e) {
    EXPECT_NE(std::string(e.what()).find("is a FIFO"), std::string::npos) << e.what();
  }
  std::remove(fifo.c_str());
  EXPECT_THROW(Topology::from_spec(testing::TempDir()), hympi::TopologyError);  // a directory
}

TEST(Topology, ThisMachineHasCores) {
  const auto t = Topology::this_machine();
  EXPECT_TRUE(t.is_this_system());
  EXPECT_GE(t.cores(), 1);
  EXPECT_GE(t.pus(), t.cores());
  EXPECT_EQ(t.machine_set().weight(), t.pus());
}

TEST(Topology, NodeSetsAndL3) {
  const auto t = Topology::from_synthetic("pack:2 numa:2 core:4 pu:2");
  // NUMA node 3 (logical) is the second node of package 1: PUs 24-31, kernel node 3.
  EXPECT_EQ(t.numa_set(3).to_list(), "24-31");
  EXPECT_EQ(t.numa_nodeset(3).to_list(), "3");
  EXPECT_EQ(t.machine_nodeset().to_list(), "0-3");
  EXPECT_EQ(t.nodeset_of(t.package_set(1)).to_list(), "2-3");
  EXPECT_EQ(t.nodeset_of(t.core_set(5)).to_list(), "1");  // cores 4-7 sit on node 1
  EXPECT_EQ(t.nodeset_of(hympi::Bitmap()).weight(), 0);
  EXPECT_EQ(t.l3_caches(), 0);  // the description has no cache level
  EXPECT_THROW((void)t.l3_set(0), hympi::InvalidArgument);
  EXPECT_THROW((void)t.numa_nodeset(4), hympi::InvalidArgument);

  const auto epyc = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/dual-epyc-like.xml");
  ASSERT_EQ(epyc.l3_caches(), 8);
  EXPECT_EQ(epyc.l3_set(7).weight() * 8, epyc.pus());
  EXPECT_EQ(epyc.nodeset_of(epyc.l3_set(0)).weight(), 1);
}
