// Overlap planning without MPI: strategy parsing, shells, tiles, and the communication-thread model of Kaiser and
// Baden, "Overlapping communication and computation with OpenMP and MPI" (§4.2).
#include <gtest/gtest.h>

#include <vector>

#include "hympi/core/error.hpp"
#include "hympi/grid/overlap.hpp"

using namespace hympi;

namespace {

/// How often each point of [0, extent) is covered by `boxes` (boxes outside count as -1000).
std::vector<int> coverage(const std::array<long, 3>& n, const std::vector<Box3>& boxes) {
  std::vector<int> c(static_cast<std::size_t>(n[0] * n[1] * n[2]), 0);
  for (const Box3& b : boxes) {
    for (int d = 0; d < 3; ++d)
      if (b.low[d] < 0 || b.high[d] > n[d]) c.assign(c.size(), -1000);
    for (long k = b.low[2]; k < b.high[2]; ++k)
      for (long j = b.low[1]; j < b.high[1]; ++j)
        for (long i = b.low[0]; i < b.high[0]; ++i) ++c[static_cast<std::size_t>((k * n[1] + j) * n[0] + i)];
  }
  return c;
}

bool covers_once(const std::array<long, 3>& n, const std::vector<Box3>& boxes) {
  for (int v : coverage(n, boxes))
    if (v != 1) return false;
  return true;
}

ExchangedSides sides_from_mask(int mask) {
  ExchangedSides s{};
  for (int d = 0; d < 3; ++d)
    for (int e = 0; e < 2; ++e) s[d][e] = (mask >> (2 * d + e)) & 1;
  return s;
}

}  // namespace

TEST(OverlapStrategy, ParsesAndPrintsEveryStrategy) {
  for (auto s : {OverlapStrategy::bulk, OverlapStrategy::split, OverlapStrategy::comm_thread})
    EXPECT_EQ(parse_overlap_strategy(to_string(s)), s);
  EXPECT_EQ(to_string(OverlapStrategy::comm_thread), "commthread");
  try {
    parse_overlap_strategy("overlapped");
    FAIL() << "no exception";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("'overlapped'"), std::string::npos) << e.what();
  }
}

TEST(OverlapOptions, RejectsZeroTilesAndCommThreadWithOneThread) {
  OverlapOptions o;
  EXPECT_NO_THROW(o.validate(1));
  o.tile = std::array<long, 3>{8, 0, 4};
  EXPECT_THROW(o.validate(4), InvalidArgument);
  o.tile = std::array<long, 3>{8, 1, 4};
  EXPECT_NO_THROW(o.validate(4));
  o.strategy = OverlapStrategy::comm_thread;
  EXPECT_THROW(o.validate(1), InvalidArgument);
  EXPECT_NO_THROW(o.validate(2));
  EXPECT_EQ(o.to_json()["strategy"], "commthread");
  EXPECT_EQ(o.to_json()["tile"][1], 1);
}

TEST(OverlapPlan, ShellAndInteriorPartitionTheBlockForEverySideSet) {
  for (const std::array<long, 3> n : {std::array<long, 3>{7, 5, 4}, {1, 6, 3}, {2, 2, 2}, {9, 1, 1}})
    for (int width : {1, 2})
      for (int mask = 0; mask < 64; ++mask) {
        const auto sides = sides_from_mask(mask);
        Box3 interior;
        auto boxes = shell_boxes(n, width, sides, interior);
        // The interior keeps `width` from every exchanged side, and all of the block elsewhere.
        if (!interior.empty()) {
          for (int d = 0; d < 3; ++d) {
            EXPECT_EQ(interior.low[d], sides[d][0] ? width : 0);
            EXPECT_EQ(interior.high[d], sides[d][1] ? n[d] - width : n[d]);
          }
          boxes.push_back(interior);
        }
        ASSERT_TRUE(covers_once(n, boxes)) << "extent " << n[0] << "x" << n[1] << "x" << n[2] << " width " << width
                                           << " sides " << mask;
        if (mask == 0) {
          EXPECT_EQ(interior, (Box3{{0, 0, 0}, n}));
        }
      }
}

TEST(OverlapPlan, TilesCoverTheBoxOnceAndRespectTheTileSize) {
  const Box3 box{{2, 1, 3}, {13, 8, 9}};
  const std::array<long, 3> n{13, 8, 9};
  for (const std::array<long, 3> t : {std::array<long, 3>{4, 3, 2}, {1, 1, 1}, {100, 100, 100}, {11, 7, 6}}) {
    const auto tiles = tile_box(box, t, UntiledRows::plane_pairs);
    std::vector<Box3> with_outside = tiles;
    // Mark what lies outside `box` as covered so covers_once checks exactly the box.
    for (long k = 0; k < n[2]; ++k)
      for (long j = 0; j < n[1]; ++j)
        for (long i = 0; i < n[0]; ++i) {
          const bool inside = i >= 2 && j >= 1 && k >= 3;
          if (!inside) with_outside.push_back(Box3{{i, j, k}, {i + 1, j + 1, k + 1}});
        }
    EXPECT_TRUE(covers_once(n, with_outside));
    for (const Box3& b : tiles)
      for (int d = 0; d < 3; ++d) EXPECT_LE(b.size()[d], t[d]);
  }
  // Untiled: x-rows in pairs of z-planes, the last plane alone when the count is odd.
  const auto rows = tile_box(box, std::nullopt, UntiledRows::plane_pairs);
  EXPECT_EQ(rows.size(), 7u * 3u);
  for (const Box3& b : rows) EXPECT_EQ(b.size(), (std::array<long, 3>{11, 1, 2}));
  const auto odd = tile_box(Box3{{0, 0, 0}, {5, 2, 3}}, std::nullopt, UntiledRows::plane_pairs);
  ASSERT_EQ(odd.size(), 4u);
  EXPECT_EQ(odd[0].size(), (std::array<long, 3>{5, 1, 2}));
  EXPECT_EQ(odd[3].size(), (std::array<long, 3>{5, 1, 1}));
  // Or x-rows of one plane each, in storage order: y fastest, then z.
  const auto single = tile_box(box, std::nullopt, UntiledRows::single_planes);
  ASSERT_EQ(single.size(), 7u * 6u);
  for (std::size_t q = 0; q < single.size(); ++q) {
    EXPECT_EQ(single[q].size(), (std::array<long, 3>{11, 1, 1}));
    EXPECT_EQ(single[q].low[1], 1 + static_cast<long>(q % 7));
    EXPECT_EQ(single[q].low[2], 3 + static_cast<long>(q / 7));
  }
  EXPECT_THROW(tile_box(box, std::array<long, 3>{0, 1, 1}, UntiledRows::single_planes), InvalidArgument);
}

TEST(OverlapPlan, WorkItemsOfEveryStrategyCoverTheBlockOnce) {
  const std::array<long, 3> n{9, 7, 5};
  for (int mask : {0, 63, 5, 48})
    for (auto tile : {std::optional<std::array<long, 3>>{}, std::optional<std::array<long, 3>>{{4, 3, 2}}}) {
      OverlapOptions o;
      o.tile = tile;
      for (const auto rows : {UntiledRows::plane_pairs, UntiledRows::single_planes}) {
        const OverlapPlan plan(n, 1, sides_from_mask(mask), o, rows);
        EXPECT_TRUE(covers_once(n, plan.all()));
        auto both = plan.interior();
        both.insert(both.end(), plan.shell().begin(), plan.shell().end());
        EXPECT_TRUE(covers_once(n, both));
        if (mask == 0) {
          EXPECT_TRUE(plan.shell().empty());
        }
      }
    }
  EXPECT_THROW(OverlapPlan(n, 0, sides_from_mask(63), OverlapOptions{}, UntiledRows::plane_pairs), InvalidArgument);
}

TEST(CommThreadModel, MatchesKaiserBaden) {
  // P = 8: break-even at C = 1/8, the best case T = P/(2P-1) at C = P/(2P-1) = 8/15.
  auto m = model_comm_thread({1.0, 0.125, 0.875}, 8);
  EXPECT_DOUBLE_EQ(m.comm_fraction, 0.125);
  EXPECT_DOUBLE_EQ(m.relative_time, 1.0);
  m = model_comm_thread({2.0, 8.0 / 15.0, 7.0 / 15.0}, 8);
  EXPECT_NEAR(m.relative_time, 8.0 / 15.0, 1e-15);
  EXPECT_NEAR(m.predicted_s, 16.0 / 15.0, 1e-15);
  // Without communication a spared thread only costs: T = P/(P-1).
  m = model_comm_thread({0.3, 0.0, 0.3}, 2);
  EXPECT_DOUBLE_EQ(m.relative_time, 2.0);
  EXPECT_DOUBLE_EQ(m.predicted_s, 0.6);
  // Communication-bound: the comm thread's own time is the floor.
  m = model_comm_thread({1.0, 0.9, 0.1}, 4);
  EXPECT_DOUBLE_EQ(m.relative_time, 0.9);
  EXPECT_THROW(model_comm_thread({1.0, 0.5, 0.5}, 1), InvalidArgument);
  EXPECT_THROW(model_comm_thread({0.0, 0.0, 0.0}, 2), InvalidArgument);
}
