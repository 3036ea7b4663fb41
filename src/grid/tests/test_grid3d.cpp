// Grid3D's indexing: cache-line aligned rows, every point addressed once, inside storage;
// large blocks on huge pages.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "hympi/grid/grid3d.hpp"

using namespace hympi;

TEST(Grid3D, EveryRowStartsACacheLineAndPointsDoNotOverlap) {
  for (const std::array<long, 3> n : {std::array<long, 3>{256, 3, 2}, {13, 11, 7}, {1, 1, 1}, {9, 1, 4}})
    for (int ghost : {0, 1, 2, 3}) {
      SCOPED_TRACE(std::to_string(n[0]) + "x" + std::to_string(n[1]) + "x" + std::to_string(n[2]) + " ghost " +
                   std::to_string(ghost));
      Grid3D<double> grid(Box3{{5, 6, 7}, {5 + n[0], 6 + n[1], 7 + n[2]}}, ghost);
      const double* base = grid.data().data();
      std::vector<int> hits(grid.data().size(), 0);
      for (long k = -ghost; k < n[2] + ghost; ++k)
        for (long j = -ghost; j < n[1] + ghost; ++j) {
          EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&grid(0, j, k)) % GridIndexing::kLineBytes, 0u);
          for (long i = -ghost; i < n[0] + ghost; ++i) {
            const long at = grid.index(i, j, k);
            ASSERT_GE(at, 0);
            ASSERT_LT(static_cast<std::size_t>(at), hits.size());
            EXPECT_EQ(&grid(i, j, k), base + at);
            ++hits[static_cast<std::size_t>(at)];
          }
        }
      long addressed = 0;
      for (int h : hits) {
        EXPECT_LE(h, 1);
        addressed += h;
      }
      EXPECT_EQ(addressed, grid.padded()[0] * grid.padded()[1] * grid.padded()[2]);
      EXPECT_EQ(grid.stride_y() % 8, 0);
      EXPECT_GE(grid.stride_y(), grid.padded()[0]);
    }
}

TEST(Grid3D, StartsZeroedAndRejectsBadShapes) {
  Grid3D<double> grid(Box3{{0, 0, 0}, {5, 4, 3}}, 1);
  for (double v : grid.data()) EXPECT_EQ(v, 0.0);
  EXPECT_THROW(Grid3D<double>(Box3{{0, 0, 0}, {0, 4, 3}}, 1), InvalidArgument);
  EXPECT_THROW(Grid3D<double>(Box3{{0, 0, 0}, {5, 4, 3}}, -1), InvalidArgument);
}

TEST(Grid3D, LargeBlocksStartOnAHugePage) {
  Grid3D<double> grid(Box3{{0, 0, 0}, {128, 128, 66}}, 1);  // 8.8 MB of storage
  ASSERT_GE(grid.data().size_bytes(), kHugePageMinBytes);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(grid.data().data()) % (std::uintptr_t{2} << 20), 0u);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(&grid(0, 127, 65)) % GridIndexing::kLineBytes, 0u);
  EXPECT_EQ(grid(127, 127, 65), 0.0);
  const auto small = make_untouched_array<double>(1000);
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(small.get()) % kUntouchedAlignment, 0u);
}
