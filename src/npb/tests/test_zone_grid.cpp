// ZoneGrid against the zone sizes NPB-MZ's zone_setup produces (recorded in the data file).
#include "hympi/core/error.hpp"
#include "hympi/npb/zone_grid.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <set>

namespace {

nlohmann::json verification_data() {
  std::ifstream in(std::string(HYMPI_TEST_DATA) + "/../../data/npb-mz/verification.json");
  return nlohmann::json::parse(in);
}

TEST(ZoneGrid, MatchesReferenceZoneSizesForEveryClass) {
  const auto data = verification_data();
  int checked = 0;
  for (const char* bench : {"bt-mz", "sp-mz", "lu-mz"}) {
    for (const auto& [cls, entry] : data.at(bench).items()) {
      if (cls.front() == '_') continue;
      const auto grid = hympi::ZoneGrid::from_json(data, bench, cls);
      EXPECT_EQ(grid.x_sizes(), entry.at("zone_x_sizes").get<std::vector<int>>()) << bench << " " << cls;
      EXPECT_EQ(grid.y_sizes(), entry.at("zone_y_sizes").get<std::vector<int>>()) << bench << " " << cls;
      EXPECT_EQ(grid.num_zones(), entry.at("num_zones").get<int>());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 24);  // S, W, A, B, C, D, E, F of three benchmarks
}

TEST(ZoneGrid, ZonesTileTheMeshWithOnePointOverlapAccounted) {
  const hympi::ZoneGrid grid({8, 8, 304, 208, 17, 4.5});  // BT-MZ class B
  long sx = 0;
  for (int s : grid.x_sizes()) sx += s;
  long sy = 0;
  for (int s : grid.y_sizes()) sy += s;
  EXPECT_EQ(sx, 304);
  EXPECT_EQ(sy, 208);
  EXPECT_DOUBLE_EQ(grid.total_points(), 304.0 * 208.0 * 17.0);
  // Stretched widths grow monotonically and the largest/smallest ratio is near the requested 4.5.
  for (std::size_t i = 1; i < grid.x_sizes().size(); ++i) EXPECT_GT(grid.x_sizes()[i], grid.x_sizes()[i - 1]);
  EXPECT_NEAR(double(grid.x_sizes().back()) / grid.x_sizes().front(), 4.5, 0.5);
}

TEST(ZoneGrid, NeighboursArePeriodicAndSymmetric) {
  const hympi::ZoneGrid grid({4, 3, 64, 48, 8, 1.0});
  for (const auto& z : grid.zones()) {
    for (auto f : {hympi::ZoneFace::west, hympi::ZoneFace::east, hympi::ZoneFace::south, hympi::ZoneFace::north}) {
      const auto& n = grid.zone(z.next(f));
      EXPECT_EQ(n.next(hympi::opposite(f)), z.id);
      if (f == hympi::ZoneFace::west || f == hympi::ZoneFace::east) {
        EXPECT_EQ(n.ny, z.ny);
      } else {
        EXPECT_EQ(n.nx, z.nx);
      }
    }
  }
  EXPECT_EQ(grid.zone(0).next(hympi::ZoneFace::west), 3);
  EXPECT_EQ(grid.zone(0).next(hympi::ZoneFace::south), 8);
}

TEST(ZoneGrid, EqualZonesForRatioOne) {
  const hympi::ZoneGrid grid({16, 16, 480, 320, 28, 1.0});  // SP-MZ class C
  EXPECT_EQ(std::set<int>(grid.x_sizes().begin(), grid.x_sizes().end()), std::set<int>{30});
  EXPECT_DOUBLE_EQ(grid.size_spread(), 1.0);
}

TEST(ZoneGrid, RejectsBadGeometry) {
  EXPECT_THROW(hympi::ZoneGrid({0, 4, 64, 64, 8, 1.0}), hympi::InvalidArgument);
  EXPECT_THROW(hympi::ZoneGrid({4, 4, 8, 64, 8, 1.0}), hympi::InvalidArgument);
  EXPECT_THROW(hympi::ZoneGrid({4, 4, 64, 64, 2, 1.0}), hympi::InvalidArgument);
  EXPECT_THROW(hympi::ZoneGrid({4, 4, 64, 64, 8, 0.5}), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::ZoneGrid({2, 2, 24, 24, 6, 1.0}).zone(4), hympi::InvalidArgument);
  const auto data = verification_data();
  EXPECT_THROW((void)hympi::ZoneGrid::from_json(data, "bt-mz", "Q"), hympi::InvalidArgument);
  EXPECT_THROW((void)hympi::ZoneGrid::from_json(data, "xx-mz", "S"), hympi::InvalidArgument);
}

}  // namespace
