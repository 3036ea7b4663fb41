// Locations cut from synthetic and recorded topologies; the num_locs option's text; block rules.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/locality/locations.hpp"
#include "synthetic_machine.hpp"

using hympi::InvalidArgument;
using hympi::Topology;
using namespace hympi::locality;

namespace {
std::vector<std::string> cpusets(const Locations& locs) {
  std::vector<std::string> out;
  for (const Location& l : locs.all()) out.push_back(l.cpuset.to_list());
  return out;
}
std::vector<std::string> nodesets(const Locations& locs) {
  std::vector<std::string> out;
  for (const Location& l : locs.all()) out.push_back(l.nodeset.to_list());
  return out;
}
}  // namespace

TEST(Locations, OnePerNumaNode) {
  const auto& topo = hympi::test::four_numa_machine();
  const auto locs = Locations::by_level(topo, LocationLevel::numa);
  EXPECT_EQ(locs.size(), 4);
  EXPECT_EQ(cpusets(locs), (std::vector<std::string>{"0-7", "8-15", "16-23", "24-31"}));
  EXPECT_EQ(nodesets(locs), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(locs.at(2).index, 2);
  EXPECT_EQ(locs.origin(), "numa");
  EXPECT_EQ(&locs.topology(), &topo);
}

TEST(Locations, OnePerPackageHoldsItsNodes) {
  const auto& topo = hympi::test::four_numa_machine();
  const auto locs = Locations::by_level(topo, LocationLevel::package);
  EXPECT_EQ(cpusets(locs), (std::vector<std::string>{"0-15", "16-31"}));
  EXPECT_EQ(nodesets(locs), (std::vector<std::string>{"0-1", "2-3"}));
}

TEST(Locations, OnePerL3OnARecordedMachine) {
  const auto epyc = Topology::from_xml_file(HYMPI_TEST_DATA "/topologies/dual-epyc-like.xml");
  const auto locs = Locations::by_level(epyc, LocationLevel::l3);
  ASSERT_EQ(locs.size(), 8);
  for (const Location& l : locs.all()) {
    EXPECT_EQ(l.cpuset.weight() * 8, epyc.pus());
    EXPECT_EQ(l.nodeset.weight(), 1) << l.index;
  }
  // The recorded machine has one L3 per NUMA node: both levels give the same locations.
  EXPECT_EQ(cpusets(locs), cpusets(Locations::by_level(epyc, LocationLevel::numa)));
}

TEST(Locations, LevelWithoutObjectsIsTheWholeMachine) {
  const auto& topo = hympi::test::four_numa_machine();  // no caches described
  const auto locs = Locations::by_level(topo, LocationLevel::l3);
  ASSERT_EQ(locs.size(), 1);
  EXPECT_EQ(locs.at(0).cpuset.to_list(), "0-31");
  EXPECT_EQ(locs.at(0).nodeset.to_list(), "0-3");
}

TEST(Locations, ByCountCutsCoresInBlocks) {
  const auto& topo = hympi::test::four_numa_machine();
  // As many locations as NUMA nodes: the same sets as the level.
  EXPECT_EQ(cpusets(Locations::by_count(topo, 4)), cpusets(Locations::by_level(topo, LocationLevel::numa)));
  // 16 cores over 3: 6, 5, 5 cores; the first block spans nodes 0 and 1.
  const auto three = Locations::by_count(topo, 3);
  EXPECT_EQ(cpusets(three), (std::vector<std::string>{"0-11", "12-21", "22-31"}));
  EXPECT_EQ(nodesets(three), (std::vector<std::string>{"0-1", "1-2", "2-3"}));
  EXPECT_EQ(three.origin(), "count");
  // More locations than cores: PUs, one each; never more than the PUs.
  const auto per_pu = Locations::by_count(topo, 32);
  EXPECT_EQ(per_pu.at(31).cpuset.to_list(), "31");
  EXPECT_EQ(per_pu.at(31).nodeset.to_list(), "3");
  EXPECT_EQ(Locations::by_count(topo, 1).at(0).cpuset.to_list(), "0-31");
}

TEST(Locations, BadCountsThrow) {
  const auto topo = Topology::from_synthetic("pack:1 core:2 pu:2");
  for (int bad : {0, -1, 5}) EXPECT_THROW((void)Locations::by_count(topo, bad), InvalidArgument) << bad;
  try {
    (void)Locations::by_count(topo, 0);
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "number of locations must be >= 1, got 0");
  }
}

TEST(Locations, TheEarlyCountCheckRefusesWhatByCountRefusesInItsWords) {
  const auto topo = Topology::from_synthetic("pack:1 core:2 pu:2");
  const auto words = [](auto&& build) {
    try {
      build();
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(words([&] { Locations::check_count(topo, 5); }), "number of locations 5 exceeds the 4 PUs available");
  EXPECT_EQ(words([&] { Locations::check_count(topo, 5); }), words([&] { (void)Locations::by_count(topo, 5); }));
  const hympi::Bitmap two = topo.core_set(0);  // PUs 0 and 1
  EXPECT_EQ(words([&] { Locations::check_count(topo, 3, &two); }), "number of locations 3 exceeds the 2 PUs available");
  EXPECT_EQ(words([&] { Locations::check_count(topo, 4); }), "");  // as many as PUs: built
}

TEST(Locations, IndexesWrapModuloNlocs) {
  const auto& topo = hympi::test::four_numa_machine();
  const auto locs = Locations::by_level(topo, LocationLevel::numa);
  EXPECT_EQ(locs.wrap(0), 0);
  EXPECT_EQ(locs.wrap(5), 1);
  EXPECT_EQ(locs.wrap(-1), 3);
  EXPECT_EQ(locs.wrap(-8), 0);
  EXPECT_EQ(locs.at(6).index, 2);
  EXPECT_EQ(locs.location_of_slot({2, 5}, 3), 1);  // 2:5 is 2, 3, 0, 1
  EXPECT_EQ(locs.everywhere().count(), 4);
}

TEST(Locations, RangesAreNonEmpty) {
  EXPECT_NO_THROW(check_range({3, 3}));
  EXPECT_NO_THROW(check_range({-2, 9}));
  try {
    check_range({3, 1});
    FAIL() << "an empty range was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "location range 3:1 is empty (m:n needs n >= m)");
  }
  EXPECT_EQ(LocationRange::single(2).to_string(), "2");
  EXPECT_EQ((LocationRange{0, 3}.count()), 4);
}

TEST(Locations, NumLocsOptionText) {
  EXPECT_EQ(parse_num_locs("").count, 0);
  EXPECT_EQ(parse_num_locs("").level, LocationLevel::numa);
  EXPECT_EQ(parse_num_locs("package").level, LocationLevel::package);
  EXPECT_EQ(parse_num_locs("l3").level, LocationLevel::l3);
  EXPECT_EQ(parse_num_locs("12").count, 12);
  for (const char* bad : {"0", "-3", "+2", "4x", " 4", "two", "cyclic"}) {
    try {
      (void)parse_num_locs(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()),
                std::string("number of locations must be an integer >= 1 or numa, package or l3, got '") + bad + "'");
    }
  }
  const auto& topo = hympi::test::four_numa_machine();
  EXPECT_EQ(Locations::from_spec(topo, parse_num_locs("3")).size(), 3);
  EXPECT_EQ(Locations::from_spec(topo, parse_num_locs("package")).size(), 2);
}

TEST(Locations, BlockRule) {
  // 10 over 4: 3, 3, 2, 2.
  EXPECT_EQ(block_begin(10, 4, 0), 0);
  EXPECT_EQ(block_begin(10, 4, 1), 3);
  EXPECT_EQ(block_begin(10, 4, 2), 6);
  EXPECT_EQ(block_begin(10, 4, 3), 8);
  EXPECT_EQ(block_begin(10, 4, 4), 10);
  const int owners[10] = {0, 0, 0, 1, 1, 1, 2, 2, 3, 3};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(block_owner(10, 4, i), owners[i]) << i;
  // Fewer items than parts: one each, the last parts empty.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(block_owner(3, 5, i), i);
  EXPECT_EQ(block_begin(3, 5, 5), 3);
}

TEST(Locations, DescribeListsEveryLocation) {
  const auto topo = Topology::from_synthetic("pack:1 numa:2 core:1 pu:2");
  EXPECT_EQ(Locations::by_level(topo, LocationLevel::numa).describe(),
            "location 0: PUs 0-1, NUMA nodes 0\nlocation 1: PUs 2-3, NUMA nodes 1\n");
}

TEST(Locations, WithinARanksSet) {
  const auto& topo = hympi::test::four_numa_machine();
  const auto set = [](const char* list) {
    hympi::Bitmap b;
    hwloc_bitmap_list_sscanf(b.get(), list);
    return b;
  };
  const auto package1 = set("16-31");  // e.g. a rank bound with --bind package
  const auto numa = Locations::by_level(topo, LocationLevel::numa, &package1);
  EXPECT_EQ(cpusets(numa), (std::vector<std::string>{"16-23", "24-31"}));
  EXPECT_EQ(nodesets(numa), (std::vector<std::string>{"2", "3"}));
  const auto three = Locations::by_count(topo, 3, &package1);  // 8 cores: 3, 3, 2
  EXPECT_EQ(cpusets(three), (std::vector<std::string>{"16-21", "22-27", "28-31"}));
  const auto straddling = set("4-11");
  EXPECT_EQ(cpusets(Locations::by_level(topo, LocationLevel::numa, &straddling)),
            (std::vector<std::string>{"4-7", "8-11"}));
  EXPECT_EQ(nodesets(Locations::by_level(topo, LocationLevel::package, &straddling)),
            (std::vector<std::string>{"0-1"}));
  EXPECT_THROW((void)Locations::by_count(topo, 9, &straddling), InvalidArgument);  // 8 PUs
  const auto outside = set("40-50");
  EXPECT_THROW((void)Locations::by_level(topo, LocationLevel::numa, &outside), InvalidArgument);
}
