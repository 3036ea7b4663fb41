// The blade-row kernels without MPI: block splits (blades over groups, J rows over threads or ranks), the
// interpolation weights, the line solve against a dense solve, the checksum, the manufactured solution's geometry.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "hympi/blades/kernels.hpp"
#include "hympi/blades/problem.hpp"
#include "hympi/core/error.hpp"

using namespace hympi::blades;

namespace {

TEST(BlockRange, SplitsUnevenlyContiguousAndCoversEveryItem) {
  // 10 blades over 3 groups: 4, 3, 3; 2 rows over 3 parts: 1, 1, 0.
  EXPECT_EQ(block_range(10, 3, 0).begin, 0);
  EXPECT_EQ(block_range(10, 3, 0).end, 4);
  EXPECT_EQ(block_range(10, 3, 1).begin, 4);
  EXPECT_EQ(block_range(10, 3, 2).end, 10);
  EXPECT_EQ(block_range(2, 3, 2).size(), 0);
  for (long n : {1L, 5L, 7L, 8L, 32L})
    for (int parts = 1; parts <= 9; ++parts) {
      long next = 0, smallest = n, largest = 0;
      for (int p = 0; p < parts; ++p) {
        const Range r = block_range(n, parts, p);
        EXPECT_EQ(r.begin, next) << n << " over " << parts;
        next = r.end;
        smallest = std::min(smallest, r.size());
        largest = std::max(largest, r.size());
        for (long item = r.begin; item < r.end; ++item) EXPECT_EQ(block_owner(n, parts, item), p);
      }
      EXPECT_EQ(next, n);
      EXPECT_LE(largest - smallest, 1);
    }
}

TEST(BlockRange, RejectsBadSplits) {
  EXPECT_THROW((void)block_range(4, 0, 0), hympi::InvalidArgument);
  EXPECT_THROW((void)block_range(4, 2, 2), hympi::InvalidArgument);
  EXPECT_THROW((void)block_owner(4, 2, 4), hympi::InvalidArgument);
}

TEST(Interpolation, WeightsFollowTheOffsetAndReproduceLinearData) {
  const Interpolation up = Interpolation::for_offset(0.25);
  EXPECT_EQ(up.near, 0.75F);
  EXPECT_EQ(up.far, 0.25F);
  EXPECT_EQ(up.step, 1);
  const Interpolation down = Interpolation::for_offset(-0.25);
  EXPECT_EQ(down.far, 0.25F);
  EXPECT_EQ(down.step, -1);
  const Interpolation matching = Interpolation::for_offset(0.0);
  EXPECT_EQ(matching.near, 1.0F);
  EXPECT_EQ(matching.far, 0.0F);
  EXPECT_THROW((void)Interpolation::for_offset(1.5), hympi::InvalidArgument);
  EXPECT_THROW((void)Interpolation::for_offset(NAN), hympi::InvalidArgument);
  // Rows j and j+1 of f(j) = 3 + 2 j (per i): the ghost must be f(j + 0.25) = f(j) + 0.5, exactly in float.
  std::vector<float> a(37), b(37), ghost(37);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = 3.0F + 2.0F * static_cast<float>(i);
    b[i] = a[i] + 2.0F;
  }
  interpolate_row(up, a, b, ghost);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(ghost[i], a[i] + 0.5F) << i;
  interpolate_row(matching, a, b, ghost);
  EXPECT_EQ(ghost, a);
}

/// Solves the dense system of LineSolver(points, c) in double (Gaussian elimination without pivoting, fine for a
/// diagonally dominant matrix).
std::vector<double> dense_solve(long points, double c, const std::vector<double>& rhs, double left, double right) {
  const auto m = static_cast<std::size_t>(points - 2);
  std::vector<std::vector<double>> a(m, std::vector<double>(m, 0.0));
  std::vector<double> b(rhs.begin() + 1, rhs.end() - 1);
  for (std::size_t i = 0; i < m; ++i) {
    a[i][i] = 1 + 2 * c;
    if (i > 0) a[i][i - 1] = -c;
    if (i + 1 < m) a[i][i + 1] = -c;
  }
  b[0] += c * left;
  b[m - 1] += c * right;
  for (std::size_t p = 0; p < m; ++p)
    for (std::size_t r = p + 1; r < m; ++r) {
      const double f = a[r][p] / a[p][p];
      for (std::size_t q = p; q < m; ++q) a[r][q] -= f * a[p][q];
      b[r] -= f * b[p];
    }
  std::vector<double> x(m);
  for (std::size_t i = m; i-- > 0;) {
    double s = b[i];
    for (std::size_t q = i + 1; q < m; ++q) s -= a[i][q] * x[q];
    x[i] = s / a[i][i];
  }
  return x;
}

TEST(LineSolver, MatchesADenseSolveAndKeepsTheDirichletEnds) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
  for (long points : {3L, 4L, 9L, 48L})
    for (float c : {0.0F, 0.46F, 3.0F}) {
      std::vector<float> rhs(static_cast<std::size_t>(points)), line(rhs.size(), 0.0F);
      for (float& v : rhs) v = dist(gen);
      line.front() = 0.7F;
      line.back() = -0.3F;
      const std::vector<double> expected =
          dense_solve(points, c, std::vector<double>(rhs.begin(), rhs.end()), line.front(), line.back());
      LineSolver solver(points, c);
      solver.solve(rhs, line);
      EXPECT_EQ(line.front(), 0.7F);
      EXPECT_EQ(line.back(), -0.3F);
      for (std::size_t i = 0; i < expected.size(); ++i)
        EXPECT_NEAR(line[i + 1], expected[i], 2e-6) << "points " << points << " c " << c << " i " << i + 1;
    }
  EXPECT_THROW(LineSolver(2, 1.0F), hympi::InvalidArgument);
  EXPECT_THROW(LineSolver(5, -1.0F), hympi::InvalidArgument);
}

TEST(RowChecksum, ChangesWithOneValueOrASwapAndIgnoresHowTheRowIsSplit) {
  std::vector<float> row{1.0F, 2.5F, -3.0F, 0.125F, 7.0F};
  const std::uint64_t sum = row_checksum(row, 100);
  const std::span<const float> all(row);
  EXPECT_EQ(row_checksum(all.first(2), 100) + row_checksum(all.subspan(2), 102), sum);
  std::vector<float> nudged = row;
  nudged[3] = std::nextafter(nudged[3], 1.0F);  // one unit in the last place
  EXPECT_NE(row_checksum(nudged, 100), sum);
  std::vector<float> swapped = row;
  std::swap(swapped[0], swapped[4]);
  EXPECT_NE(row_checksum(swapped, 100), sum);
  EXPECT_NE(row_checksum(row, 101), sum);  // same values at other global indices
}

TEST(Manufactured, OffsetsCloseTheRingAndTheExplicitPartIsConvex) {
  for (long blades = 1; blades <= 7; ++blades) {
    Problem p;
    p.blades = blades;
    p.grid = {12, 9, 4};
    const Manufactured m(p);
    EXPECT_LE(2.0F * (m.cy() + m.cz()), 1.0F);
    int matching = 0;
    for (long b = 0; b < blades; ++b) {
      const double d0 = m.neighbour_offset(b, 0), d1 = m.neighbour_offset(b, 1);
      // Both sides of an interface see each other's offset with opposite signs, and only +-s or 0 occur.
      EXPECT_EQ(d0, -m.neighbour_offset((b + blades - 1) % blades, 1));
      for (double d : {d0, d1}) EXPECT_TRUE(d == 0.0 || std::abs(d) == p.offset) << d;
      matching += d0 == 0.0 ? 1 : 0;
    }
    // An even ring alternates all the way round; an odd one has one matching interface (a single blade, itself).
    EXPECT_EQ(matching, blades % 2 == 0 ? 0 : 1) << blades;
    // The float tables give the exact solution at t = 0 to float accuracy.
    const double t0 = m.time_factor(0.0);
    for (long b = 0; b < blades; ++b)
      EXPECT_NEAR(t0 * m.shape_x()[3] * m.shape_y(b)[5] * m.shape_z()[static_cast<std::size_t>(b * 4 + 2)],
                  m.exact(b, 3, 5, 2, 0.0), 1e-6);
    EXPECT_GT(m.error_bound(20), m.error_bound(10));
  }
}

TEST(Problem, RejectsSizesNamingTheValue) {
  Problem p;
  p.grid = {2, 8, 8};
  try {
    p.validate();
    FAIL() << "I = 2 accepted";
  } catch (const hympi::InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("got 2"), std::string::npos) << e.what();
  }
  p = Problem{};
  p.offset = 1.5;
  EXPECT_THROW(p.validate(), hympi::InvalidArgument);
  p = Problem{};
  EXPECT_THROW((void)resolve_levels(p, InnerMode::mpi, 6, 1, 4), hympi::InvalidArgument);   // 6 is not N1 x 4
  EXPECT_THROW((void)resolve_levels(p, InnerMode::mpi, 40, 1, 40), hympi::InvalidArgument); // N2 > J = 32
  EXPECT_THROW((void)resolve_levels(p, InnerMode::openmp, 9, 1, 1), hympi::InvalidArgument); // N1 = 9 > 8 blades
  EXPECT_THROW((void)resolve_levels(p, InnerMode::openmp, 1, 33, 1), hympi::InvalidArgument); // 33 threads > J
  EXPECT_THROW((void)parse_inner("hybrid"), hympi::InvalidArgument);
  const Levels mpi = resolve_levels(p, InnerMode::mpi, 8, 1, 2);
  EXPECT_EQ(mpi.n1, 4);
  EXPECT_EQ(mpi.n2, 2);
  const Levels omp = resolve_levels(p, InnerMode::openmp, 2, 4, 1);
  EXPECT_EQ(omp.n1, 2);
  EXPECT_EQ(omp.n2, 4);
  EXPECT_EQ(omp.ranks_per_group, 1);
}

}  // namespace
