// Memory policies and page placement on this machine, asked of the kernel; multi-node checks
// run where the machine has >= 2 NUMA nodes and are skipped, with the reason, elsewhere.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>
#include <string>

#include "throws_message.hpp"
#include "hympi/core/error.hpp"
#include "hympi/locality/distributed_array.hpp"
#include "hympi/locality/membind.hpp"
#include "synthetic_machine.hpp"

using hympi::Bitmap;
using hympi::InvalidArgument;
using hympi::Topology;
using hympi::TopologyError;
using namespace hympi::locality;

namespace {

const Topology& machine() {
  static const Topology topo = Topology::this_machine();
  return topo;
}

/// Puts the calling thread's and the team's memory policy back to the kernel's default.
struct DefaultPolicyAfterwards {
  DefaultPolicyAfterwards() = default;
  DefaultPolicyAfterwards(const DefaultPolicyAfterwards&) = delete;
  DefaultPolicyAfterwards& operator=(const DefaultPolicyAfterwards&) = delete;
  ~DefaultPolicyAfterwards() {
#pragma omp parallel
    (void)hwloc_set_membind(machine().get(), machine().machine_nodeset().get(), HWLOC_MEMBIND_DEFAULT,
                            HWLOC_MEMBIND_THREAD | HWLOC_MEMBIND_BYNODESET);
  }
};

void touch(std::span<std::byte> bytes) { std::memset(bytes.data(), 1, bytes.size()); }

}  // namespace

TEST(MemoryPolicy, Names) {
  for (const char* name : {"local", "interleave", "location", "none"})
    EXPECT_EQ(hympi::to_string(parse_memory_policy(name)), name);
  hympi::test::expect_throws_message<InvalidArgument>(
      [] { (void)parse_memory_policy("bind"); },
      "unknown memory policy 'bind' (expected local, interleave, location or none)");
}

TEST(MemoryPolicy, EveryPolicyPlacesTouchedPagesWhereItSays) {
  const auto locs = Locations::by_level(machine(), LocationLevel::numa);
  // local means the node this thread runs on: pin it there, so the answer cannot change mid-test.
  Bitmap before;
  ASSERT_EQ(hwloc_get_cpubind(machine().get(), before.get(), HWLOC_CPUBIND_THREAD), 0);
  ASSERT_EQ(hwloc_set_cpubind(machine().get(), locs.at(0).cpuset.get(), HWLOC_CPUBIND_THREAD), 0);
  const std::size_t bytes = 64 * page_bytes();
  for (MemoryPolicy policy :
       {MemoryPolicy::local, MemoryPolicy::interleave, MemoryPolicy::location, MemoryPolicy::none}) {
    PageBuffer buffer = allocate_with_policy(machine(), bytes, policy, &locs.at(0));
    EXPECT_EQ(page_placement(machine(), buffer.bytes()).absent, 64u) << hympi::to_string(policy);  // untouched
    touch(buffer.bytes());
    const Bitmap meant = policy == MemoryPolicy::none ? machine().machine_nodeset()
                                                      : policy_nodeset(machine(), policy, &locs.at(0));
    const PagePlacement placed = page_placement(machine(), buffer.bytes(), &meant);
    EXPECT_EQ(placed.pages, 64u);
    EXPECT_EQ(placed.absent, 0u);
    EXPECT_EQ(placed.on_intended, 64u) << hympi::to_string(policy) << ": " << placed.to_string();
    EXPECT_DOUBLE_EQ(placed.share_on_intended(), 1.0);
  }
  EXPECT_EQ(hwloc_set_cpubind(machine().get(), before.get(), HWLOC_CPUBIND_THREAD), 0);
}

TEST(MemoryPolicy, RefusalsAreOneLineAndAllocateNothing) {
  Location nowhere;  // a node this machine does not have
  nowhere.cpuset = machine().machine_set();
  hwloc_bitmap_only(nowhere.nodeset.get(), 63);
  try {
    (void)allocate_with_policy(machine(), 4 * page_bytes(), MemoryPolicy::location, &nowhere);
    FAIL() << "binding to node 63 was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("memory policy location on NUMA nodes 63 refused by the kernel: ", 0), 0u)
        << e.what();
  }
  EXPECT_THROW((void)allocate_with_policy(machine(), 4 * page_bytes(), MemoryPolicy::location, nullptr),
               InvalidArgument);
  EXPECT_THROW((void)allocate_with_policy(machine(), 0, MemoryPolicy::none), InvalidArgument);
  const auto synthetic = Topology::from_synthetic("pack:2 numa:2 core:2 pu:1");
  EXPECT_THROW((void)allocate_with_policy(synthetic, page_bytes(), MemoryPolicy::interleave), TopologyError);
  PageBuffer buffer(page_bytes());
  EXPECT_THROW(bind_memory(machine(), buffer.bytes(), MemoryPolicy::location, &nowhere), InvalidArgument);
}

TEST(MemoryPolicy, ThreadPoliciesApplyToLaterAllocations) {
  const DefaultPolicyAfterwards restore;
  const auto locs = Locations::by_level(machine(), LocationLevel::numa);
  const Location& last = locs.at(locs.size() - 1);
  set_memory_policy(machine(), MemoryPolicy::location, &last);
  PageBuffer buffer(32 * page_bytes());
  touch(buffer.bytes());
  const PagePlacement placed = page_placement(machine(), buffer.bytes(), &last.nodeset);
  EXPECT_EQ(placed.on_intended, 32u) << placed.to_string();
  EXPECT_NO_THROW(set_memory_policy(machine(), MemoryPolicy::none));
  EXPECT_THROW(set_memory_policy(machine(), MemoryPolicy::location), InvalidArgument);
}

TEST(PagePlacement, SummaryAndBadInput) {
  PageBuffer buffer(8 * page_bytes());
  touch(buffer.bytes().subspan(0, 3 * page_bytes()));
  const Bitmap all = machine().machine_nodeset();
  const PagePlacement placed = page_placement(machine(), buffer.bytes(), &all);
  EXPECT_EQ(placed.pages, 8u);
  EXPECT_EQ(placed.absent, 5u);
  EXPECT_EQ(placed.on_intended, 3u);
  std::size_t present = 0;
  for (const auto& [node, count] : placed.per_node) present += count;
  EXPECT_EQ(present, 3u);
  const auto json = placed.to_json();
  EXPECT_EQ(json.at("pages"), 8);
  EXPECT_EQ(json.at("absent"), 5);
  EXPECT_DOUBLE_EQ(json.at("share_on_intended").get<double>(), 3.0 / 8.0);
  EXPECT_FALSE(page_placement(machine(), buffer.bytes()).to_json().contains("share_on_intended"));
  // An unaligned slice is widened to its pages.
  EXPECT_EQ(page_placement(machine(), buffer.bytes().subspan(page_bytes() - 1, 2)).pages, 2u);
  const std::vector<const Bitmap*> two(2, &all);
  EXPECT_THROW((void)page_placement(machine(), buffer.bytes(), two), InvalidArgument);
  const auto synthetic = Topology::from_synthetic("pack:1 core:2 pu:1");
  EXPECT_THROW((void)page_placement(synthetic, buffer.bytes()), TopologyError);
}

TEST(PagePlacement, SummariesOfSeveralBuffersAdd) {
  PagePlacement sum;
  PagePlacement a;
  a.page_bytes = 4096;
  a.pages = 3;
  a.absent = 1;
  a.per_node = {{0, 2}};
  a.has_intent = true;
  a.on_intended = 2;
  PagePlacement b = a;
  b.per_node = {{0, 1}, {1, 1}};
  sum.merge(a);
  sum.merge(b);
  sum.merge(PagePlacement{});  // an empty buffer changes nothing
  EXPECT_EQ(sum.pages, 6u);
  EXPECT_EQ(sum.absent, 2u);
  EXPECT_EQ(sum.on_intended, 4u);
  EXPECT_TRUE(sum.has_intent);
  EXPECT_EQ(sum.per_node, (std::map<int, std::size_t>{{0, 3}, {1, 1}}));
  b.has_intent = false;  // one part without intent: the sum has none
  sum.merge(b);
  EXPECT_FALSE(sum.has_intent);
  b.page_bytes = 65536;
  EXPECT_THROW(sum.merge(b), InvalidArgument);
}

TEST(PlacePages, AnyOwnerPerPageAndBadInput) {
  // Owners alternating page by page over two locations (one node here: all on node 0).
  const auto locs = Locations::by_count(machine(), std::min(2, machine().pus()));
  PageBuffer buffer(6 * page_bytes() - 100);  // the last page partly used
  std::vector<int> owners(6);
  for (std::size_t p = 0; p < owners.size(); ++p) owners[p] = static_cast<int>(p) % locs.size();
  EXPECT_NE(place_pages(locs, locs.everywhere(), buffer.bytes(), owners), PlacedBy::unplaced);
  const PagePlacement placed = owner_placement(locs, buffer.bytes(), owners);
  EXPECT_EQ(placed.pages, 6u);
  EXPECT_EQ(placed.absent, 0u);  // every page touched
  EXPECT_DOUBLE_EQ(placed.share_on_intended(), 1.0) << placed.to_string();
  PageBuffer other(6 * page_bytes());
  owners.pop_back();
  EXPECT_THROW((void)place_pages(locs, locs.everywhere(), other.bytes(), owners), InvalidArgument);
  owners.push_back(locs.size());  // not a location
  EXPECT_THROW((void)place_pages(locs, locs.everywhere(), other.bytes(), owners), InvalidArgument);
  EXPECT_THROW((void)owner_placement(locs, other.bytes(), owners), InvalidArgument);
  EXPECT_EQ(page_placement(machine(), other.bytes()).absent, 6u);  // refused before touching anything
  // Another machine: nothing bound, the pages still touched.
  const auto& synthetic = hympi::test::four_numa_machine();
  const auto four = Locations::by_level(synthetic, LocationLevel::numa);
  owners.assign(6, 3);
  EXPECT_EQ(place_pages(four, four.everywhere(), other.bytes(), owners), PlacedBy::unplaced);
  EXPECT_EQ(page_placement(machine(), other.bytes()).absent, 0u);
}

TEST(DistributedArray, BoundArrayIsWhereItsOwnersAre) {
  // Two locations even on one node (this VM: 2 cores, 1 node): every page must be on node 0.
  const auto locs = Locations::by_count(machine(), std::min(2, machine().pus()));
  const std::size_t rows = 3 * page_bytes() / sizeof(double) + 17;  // blocks end mid-page
  DistributedArray<double, 2> a(locs, {rows, 2}, {DimDistribution::block, DimDistribution::none});
  EXPECT_NE(a.placed_by(), PlacedBy::unplaced);
  const PagePlacement placed = a.placement();
  EXPECT_EQ(placed.pages, a.page_owners().size());
  EXPECT_EQ(placed.absent, 0u);
  EXPECT_DOUBLE_EQ(placed.share_on_intended(), 1.0) << placed.to_string();
  if (machine().numa_nodes() == 1) {
    ASSERT_EQ(placed.per_node.size(), 1u);
    EXPECT_EQ(placed.per_node.begin()->second, placed.pages);  // 100 % on the one node
  }
  for (std::size_t i = 0; i < rows; i += 97) EXPECT_EQ(a(i, 1), 0.0);
}

TEST(DistributedArray, TooManyRunsOfPagesAreTouchedNotBound) {
  const auto locs = Locations::by_count(machine(), std::min(2, machine().pus()));
  if (locs.size() < 2) GTEST_SKIP() << "one PU: every page has one owner";
  // Rows of two pages, split between the two locations: 2 x 8200 runs of one page each.
  const std::size_t row = 2 * page_bytes() / sizeof(double);
  DistributedArray<double, 2> a(locs, {8200, row}, {DimDistribution::none, DimDistribution::block});
  EXPECT_EQ(a.placed_by(), PlacedBy::first_touch);
  EXPECT_EQ(a.page_owners()[2], 0);
  EXPECT_EQ(a.page_owners()[3], 1);
  EXPECT_EQ(a.where(5, row - 1), 1);
  EXPECT_EQ(a.placement().absent, 0u);
}

TEST(DistributedArray, PagesLandOnTheirOwnersNodes) {
  if (machine().numa_nodes() < 2)
    GTEST_SKIP() << "this machine has " << machine().numa_nodes()
                 << " NUMA node: pages on distinct nodes need at least 2";
  const auto locs = Locations::by_level(machine(), LocationLevel::numa);
  const std::size_t n = 64 * page_bytes() / sizeof(double) * static_cast<std::size_t>(locs.size());
  for (ArrayPlacement how : {ArrayPlacement::membind, ArrayPlacement::first_touch}) {
    DistributedArray<double, 1> a(locs, {n}, {DimDistribution::block}, ArrayOptions{how});
    const PagePlacement placed = a.placement();
    EXPECT_EQ(placed.per_node.size(), static_cast<std::size_t>(locs.size())) << placed.to_string();
    // membind is exact; first touch by bound threads too, unless the kernel is short of memory on a node.
    const bool bound = how == ArrayPlacement::membind && a.placed_by() == PlacedBy::membind;
    EXPECT_GE(placed.share_on_intended(), bound ? 1.0 : 0.95) << placed.to_string();
    for (int l = 0; l < locs.size(); ++l) {
      const std::size_t first = static_cast<std::size_t>(block_begin(static_cast<long long>(n), locs.size(), l));
      EXPECT_EQ(a.where(first), l);
    }
  }
}

TEST(MemoryPolicy, InterleaveSpreadsPagesOverNodes) {
  if (machine().numa_nodes() < 2)
    GTEST_SKIP() << "this machine has " << machine().numa_nodes() << " NUMA node: nothing to interleave over";
  PageBuffer buffer = allocate_with_policy(machine(), 256 * page_bytes(), MemoryPolicy::interleave);
  touch(buffer.bytes());
  const PagePlacement placed = page_placement(machine(), buffer.bytes());
  EXPECT_EQ(placed.per_node.size(), static_cast<std::size_t>(machine().numa_nodes())) << placed.to_string();
  for (const auto& [node, count] : placed.per_node)
    EXPECT_LE(count, 256u / placed.per_node.size() + 1) << "node " << node << ": " << placed.to_string();
}
