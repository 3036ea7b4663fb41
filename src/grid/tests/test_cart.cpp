#include <gtest/gtest.h>

#include <string>

#include "hympi/grid/cart.hpp"
#include "hympi/core/error.hpp"

using namespace hympi;

TEST(Cart, ProcessGridPrefersSplittingSlowAxes) {
  EXPECT_EQ(choose_process_grid(1, {8, 8, 8}), (std::array<int, 3>{1, 1, 1}));
  EXPECT_EQ(choose_process_grid(2, {8, 8, 8}), (std::array<int, 3>{1, 1, 2}));
  EXPECT_EQ(choose_process_grid(4, {8, 8, 8}), (std::array<int, 3>{1, 2, 2}));
  EXPECT_EQ(choose_process_grid(8, {8, 8, 8}), (std::array<int, 3>{2, 2, 2}));
  // Flat grid: splitting z is impossible, the x-y plane takes the ranks.
  EXPECT_EQ(choose_process_grid(4, {40, 40, 1}), (std::array<int, 3>{2, 2, 1}));
  EXPECT_EQ(choose_process_grid(3, {9, 3, 2}), (std::array<int, 3>{3, 1, 1}));
  EXPECT_EQ(choose_process_grid(4, {8, 8, 8}, {4, 0, 0}), (std::array<int, 3>{4, 1, 1}));
}

TEST(Cart, TooManyRanksOrBadSizesAreRejected) {
  EXPECT_THROW(choose_process_grid(9, {2, 2, 2}), InvalidArgument);
  EXPECT_THROW(choose_process_grid(7, {3, 3, 3}), InvalidArgument);  // prime > every axis
  EXPECT_THROW(choose_process_grid(2, {0, 4, 4}), InvalidArgument);
  EXPECT_THROW(choose_process_grid(0, {4, 4, 4}), InvalidArgument);
  EXPECT_THROW(choose_process_grid(4, {8, 8, 8}, {3, 0, 0}), InvalidArgument);
}

TEST(Cart, PerRankProcessGridCutsTheSmallestFaces) {
  // The thin slab of Chow, "How to use hybrid MPI-OpenMP on IBM SP systems" (40x40x3 per node there), here
  // 40x40x3 per rank: cutting across y (40x3 faces) beats 2x2 (80x3 faces) and any z split (40x40 faces); a
  // global 40x40x3 grid would be cut the same way, but per rank the grid grows with the cuts, so 1x4x1 makes a
  // 40x160x3 grid.
  EXPECT_EQ(choose_process_grid_per_rank(4, {40, 40, 3}), (std::array<int, 3>{1, 4, 1}));
  EXPECT_EQ(choose_process_grid_per_rank(4, {40, 40, 3}, {2, 0, 0}), (std::array<int, 3>{2, 2, 1}));
  // Equal faces: the slowest axis is split first, as in choose_process_grid.
  EXPECT_EQ(choose_process_grid_per_rank(2, {96, 96, 96}), (std::array<int, 3>{1, 1, 2}));
  // One point per rank never leaves a block empty (choose_process_grid(8, {1, 1, 1}) throws):
  // a 1x1x8 line has 7 faces of 1 point, a 2x2x2 cube 12.
  EXPECT_EQ(choose_process_grid_per_rank(8, {1, 1, 1}), (std::array<int, 3>{1, 1, 8}));
  EXPECT_THROW(choose_process_grid_per_rank(4, {40, 40, 3}, {3, 0, 0}), InvalidArgument);
  EXPECT_THROW(choose_process_grid_per_rank(4, {40, 0, 3}), InvalidArgument);
  EXPECT_THROW(choose_process_grid_per_rank(0, {4, 4, 4}), InvalidArgument);
}

/// The message of the InvalidArgument `f` throws ("" if none).
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

TEST(Cart, FixedDimsThatCannotMatchTheRanksSaySo) {
  // 3 x 1 x 1 = 3 ranks on a run of 2: the product is the reason, not the grid's size.
  const std::string all = message_of([] { (void)choose_process_grid(2, {64, 64, 64}, {3, 1, 1}); });
  EXPECT_NE(all.find("3 x 1 x 1 = 3 ranks, but the run has 2"), std::string::npos) << all;
  const std::string part = message_of([] { (void)choose_process_grid(4, {8, 8, 8}, {3, 0, 0}); });
  EXPECT_NE(part.find("product 3 does not divide the 4 ranks"), std::string::npos) << part;
  // A grid too small for the ranks keeps its own explanation.
  const std::string small = message_of([] { (void)choose_process_grid(9, {2, 2, 2}); });
  EXPECT_NE(small.find("without empty blocks"), std::string::npos) << small;
}

TEST(Cart, BlocksTileTheGridWithRemainderFirst) {
  const std::array<long, 3> g{10, 7, 5};
  const std::array<int, 3> dims{3, 2, 1};
  long total = 0;
  for (int x = 0; x < 3; ++x)
    for (int y = 0; y < 2; ++y) total += block_range(g, dims, {x, y, 0}).count();
  EXPECT_EQ(total, 10 * 7 * 5);
  EXPECT_EQ(block_range(g, dims, {0, 0, 0}).size(), (std::array<long, 3>{4, 4, 5}));
  EXPECT_EQ(block_range(g, dims, {2, 1, 0}).low, (std::array<long, 3>{7, 4, 0}));
  EXPECT_EQ(block_range(g, dims, {2, 1, 0}).high, (std::array<long, 3>{10, 7, 5}));
}

TEST(Cart, BoxIntersect) {
  const Box3 a{{0, 0, 0}, {4, 4, 4}}, b{{2, 3, 5}, {6, 6, 6}};
  EXPECT_TRUE(a.intersect(b).empty());
  EXPECT_EQ(a.intersect(Box3{{2, 3, 1}, {6, 6, 2}}).count(), 2 * 1 * 1);
}
