// The blade-row solver at 1-4 ranks: every split of the ranks into groups (J over the ranks of a group) and of
// J over 1 or 2 threads gives the one-rank state bit for bit; the error stays within the manufactured bound, and a
// perturbed state breaks both the bound and the checksum.
#include <gtest/gtest.h>

#include "hympi/blades/solver.hpp"
#include "hympi/core/error.hpp"
#include "mpi_world.hpp"
#include "omp_threads.hpp"

using namespace hympi::blades;

namespace {

Problem small_problem() {
  Problem p;
  p.blades = 5;  // odd: one matching interface; uneven over 2, 3 and 4 groups
  p.grid = {13, 7, 3};
  return p;
}

constexpr long kSteps = 6;

std::uint64_t serial_checksum(const Problem& p) {
  BladeRowSolver serial(MPI_COMM_SELF, p, 1);
  PhaseSeconds s;
  while (serial.steps() < kSteps) serial.step(s);
  return serial.checksum();
}

TEST(BladeRowSolver, EveryLayoutGivesTheOneRankStateBitForBit) {
  const hympi::test::World world;
  const Problem p = small_problem();
  const std::uint64_t reference = serial_checksum(p);
  for (int per_group = 1; per_group <= world.size; ++per_group) {
    if (world.size % per_group != 0 || world.size / per_group > p.blades) continue;
    for (int threads : {1, 2}) {
      const hympi::test::Threads scope(threads);
      BladeRowSolver solver(MPI_COMM_WORLD, p, per_group);
      PhaseSeconds s;
      while (solver.steps() < kSteps) solver.step(s);
      EXPECT_EQ(solver.checksum(), reference) << world.size << " ranks, " << per_group << " per group, " << threads
                                              << " threads";
      EXPECT_LE(solver.max_error(), solver.manufactured().error_bound(kSteps));
      if (per_group > 1) {
        EXPECT_GT(solver.group_halo_bytes(), 0U);
      } else {
        EXPECT_EQ(solver.group_halo_bytes(), 0U);
      }
    }
  }
}

TEST(BladeRowSolver, APerturbedStateFailsTheBoundAndChangesTheChecksum) {
  const Problem p = small_problem();
  BladeRowSolver solver(MPI_COMM_WORLD, p, 1);
  PhaseSeconds s;
  while (solver.steps() < kSteps) solver.step(s);
  const double bound = solver.manufactured().error_bound(kSteps);
  const double error = solver.max_error();
  ASSERT_LE(error, bound);
  // The bound is not vacuous: the scheme's actual error is a visible fraction of it.
  EXPECT_GT(error, bound / 1000);
  const std::uint64_t before = solver.checksum();
  if (solver.blades().contains(0)) solver.at(0, 6, 3, 1) += static_cast<float>(2 * bound);
  EXPECT_GT(solver.max_error(), bound);
  EXPECT_NE(solver.checksum(), before);
  if (!solver.blades().contains(4)) {
    EXPECT_THROW((void)solver.at(4, 1, 1, 1), hympi::InvalidArgument);
  }
}

TEST(BladeRowSolver, RejectsASplitTheRanksCannotMake) {
  const hympi::test::World world;
  EXPECT_THROW(BladeRowSolver(MPI_COMM_WORLD, small_problem(), world.size + 1), hympi::InvalidArgument);
  Problem many = small_problem();
  many.grid[1] = 3;
  if (world.size > 3) {
    EXPECT_THROW(BladeRowSolver(MPI_COMM_WORLD, many, world.size), hympi::InvalidArgument);
  }
}

}  // namespace
