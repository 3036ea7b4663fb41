#include <gtest/gtest.h>
#include <mpi.h>

#include "hympi/grid/cart.hpp"
#include "hympi/core/error.hpp"
#include "hympi/grid/halo.hpp"

using namespace hympi;

namespace {

double value_at(long i, long j, long k) { return static_cast<double>(i + 1000 * j + 1000000 * k); }

struct Case {
  std::array<long, 3> global;
  std::array<bool, 3> periodic;
  int ghost;
  HaloPattern pattern;
};

/// Fills owned points with a function of the global index, exchanges, and checks every ghost:
/// it must hold the neighbour's value, or keep the sentinel past a non-periodic wall or where
/// the pattern does not send (edges/corners under faces).
void check_case(const Case& c) {
  CartDecomposition cart(MPI_COMM_WORLD, {c.global, c.periodic, {0, 0, 0}});
  Grid3D<double> grid(cart.local_box(), c.ghost);
  constexpr double sentinel = -1.0;
  for (double& x : grid.data()) x = sentinel;
  const auto n = grid.extent();
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) grid(i, j, k) = value_at(grid.global(0, i), grid.global(1, j), grid.global(2, k));
  HaloExchange halo(cart, grid, c.pattern);
  halo.exchange(grid);
  const int g = c.ghost;
  long checked = 0;
  for (long k = -g; k < n[2] + g; ++k)
    for (long j = -g; j < n[1] + g; ++j)
      for (long i = -g; i < n[0] + g; ++i) {
        const long local[3] = {i, j, k};
        long global[3];
        int outside = 0;
        bool wall = false;
        for (int d = 0; d < 3; ++d) {
          outside += local[d] < 0 || local[d] >= n[d];
          global[d] = grid.global(d, local[d]);
          if (global[d] < 0 || global[d] >= c.global[d]) {
            if (c.periodic[d])
              global[d] = (global[d] + c.global[d]) % c.global[d];
            else
              wall = true;
          }
        }
        if (outside == 0) continue;
        const bool sent = !wall && (c.pattern == HaloPattern::full || outside == 1);
        const double expected = sent ? value_at(global[0], global[1], global[2]) : sentinel;
        ASSERT_EQ(grid(i, j, k), expected) << "ghost (" << i << "," << j << "," << k << ") on rank " << cart.rank();
        ++checked;
      }
  EXPECT_GT(checked, 0);
}

}  // namespace

TEST(Halo, FacesNonPeriodic) { check_case({{12, 10, 9}, {false, false, false}, 1, HaloPattern::faces}); }
TEST(Halo, FullPeriodicGhostTwo) { check_case({{12, 10, 9}, {true, true, true}, 2, HaloPattern::full}); }
TEST(Halo, FullMixedPeriodicUneven) { check_case({{7, 5, 11}, {true, false, true}, 1, HaloPattern::full}); }
TEST(Halo, FlatGridDegenerateAxis) { check_case({{16, 12, 1}, {false, true, true}, 1, HaloPattern::full}); }

TEST(Halo, GhostWiderThanBlockIsRejected) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CartDecomposition cart(MPI_COMM_WORLD, {{4L * size, 4, 4}, {false, false, false}, {size, 1, 1}});
  Grid3D<double> grid(cart.local_box(), 5);
  EXPECT_THROW(HaloExchange(cart, grid, HaloPattern::faces), InvalidArgument);
}

TEST(Halo, MessageCountsMatchPattern) {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  CartDecomposition cart(MPI_COMM_WORLD, {{8, 8, 8}, {true, true, true}, {0, 0, 0}});
  Grid3D<double> grid(cart.local_box(), 1);
  EXPECT_EQ(HaloExchange(cart, grid, HaloPattern::faces).messages(), 6);
  EXPECT_EQ(HaloExchange(cart, grid, HaloPattern::full).messages(), 26);
  CartDecomposition walls(MPI_COMM_WORLD, {{8, 8, 8}, {false, false, false}, {0, 0, 0}});
  Grid3D<double> g2(walls.local_box(), 1);
  int expected = 0;
  for (int d = 0; d < 3; ++d) expected += (walls.coords()[d] > 0) + (walls.coords()[d] < walls.dims()[d] - 1);
  EXPECT_EQ(HaloExchange(walls, g2, HaloPattern::faces).messages(), expected);
}
