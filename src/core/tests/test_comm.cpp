// decide_on_root: rank 0's verdict reaches every rank, and a failure on rank 0 fails every rank
// instead of leaving them waiting.
#include <gtest/gtest.h>
#include <mpi.h>

#include <stdexcept>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"

using namespace hympi;

TEST(DecideOnRoot, EveryRankGetsRankZerosAnswerAndOnlyRankZeroDecides) {
  const Comm world(MPI_COMM_WORLD, false);
  for (const bool answer : {true, false}) {
    int calls = 0;
    EXPECT_EQ(decide_on_root(MPI_COMM_WORLD, [&] { ++calls; return answer; }), answer);
    EXPECT_EQ(calls, world.rank() == 0 ? 1 : 0);
  }
}

TEST(DecideOnRoot, AFailureOnRankZeroFailsEveryRank) {
  const Comm world(MPI_COMM_WORLD, false);
  const auto decide = [] () -> bool { throw std::runtime_error("reference solve failed"); };
  if (world.rank() == 0) {
    EXPECT_THROW((void)decide_on_root(MPI_COMM_WORLD, decide), std::runtime_error);
  } else {
    EXPECT_THROW((void)decide_on_root(MPI_COMM_WORLD, decide), Error);
  }
}
