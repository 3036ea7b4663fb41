// PersistentRequests: a persistent ring exchange started and completed many times, at any rank
// count; misuse is an error; destroying an active set or one that outlives MPI is safe.
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <vector>

#include "hympi/core/comm.hpp"
#include "hympi/core/error.hpp"
#include "hympi/core/requests.hpp"

namespace {

int world_rank() { return hympi::Comm(MPI_COMM_WORLD, false).rank(); }
int world_size() { return hympi::Comm(MPI_COMM_WORLD, false).size(); }

/// Every rank sends `n` values to the right and receives from the left (a self-loop at 1 rank).
struct Ring {
  std::vector<double> to_right, from_left;
  hympi::PersistentRequests requests;
  Ring(MPI_Comm comm, std::size_t n) : to_right(n), from_left(n, -1.0) {
    const int rank = world_rank(), size = world_size();
    requests.add_receive(from_left, (rank + size - 1) % size, 7, comm);
    requests.add_send(to_right, (rank + 1) % size, 7, comm);
  }
};

TEST(PersistentRequests, RingExchangeRepeatsWithFreshData) {
  const int rank = world_rank(), size = world_size();
  const int left = (rank + size - 1) % size;
  Ring ring(MPI_COMM_WORLD, 1000);
  EXPECT_EQ(ring.requests.size(), 2u);
  for (int round = 0; round < 5; ++round) {
    for (std::size_t i = 0; i < ring.to_right.size(); ++i) ring.to_right[i] = 1e6 * round + 1e3 * rank + double(i);
    ring.requests.start();
    EXPECT_TRUE(ring.requests.active());
    ring.requests.wait();
    EXPECT_FALSE(ring.requests.active());
    // The left neighbour's values of this round, not of an earlier one.
    for (std::size_t i = 0; i < ring.from_left.size(); ++i) {
      ASSERT_EQ(ring.from_left[i], 1e6 * round + 1e3 * left + double(i)) << "round " << round << " i " << i;
    }
  }
}

TEST(PersistentRequests, ProcNullPeersAndEmptySetsComplete) {
  std::vector<double> buffer(4, 3.0);
  hympi::PersistentRequests walls;
  walls.add_receive(buffer, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
  walls.add_send(buffer, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
  walls.start();
  walls.wait();
  EXPECT_EQ(buffer, std::vector<double>(4, 3.0));
  hympi::PersistentRequests empty;
  empty.start();
  empty.wait();
  EXPECT_EQ(empty.size(), 0u);
}

TEST(PersistentRequests, MisuseIsAnError) {
  std::vector<double> buffer(1);
  hympi::PersistentRequests set;
  EXPECT_THROW(set.wait(), hympi::Error);
  set.add_send(buffer, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
  set.start();
  EXPECT_THROW(set.start(), hympi::Error);
  EXPECT_THROW(set.add_receive(buffer, MPI_PROC_NULL, 1, MPI_COMM_WORLD), hympi::Error);
  set.wait();
  EXPECT_THROW(set.wait(), hympi::Error);
}

TEST(PersistentRequests, MovedSetKeepsItsRequests) {
  const int rank = world_rank(), size = world_size();
  Ring ring(MPI_COMM_WORLD, 8);
  hympi::PersistentRequests moved = std::move(ring.requests);
  EXPECT_EQ(moved.size(), 2u);
  EXPECT_EQ(ring.requests.size(), 0u);
  ring.to_right.assign(8, double(rank));
  moved.start();
  moved.wait();
  EXPECT_EQ(ring.from_left, std::vector<double>(8, double((rank + size - 1) % size)));
}

TEST(PersistentRequests, DestroyingAnActiveSetReturns) {
  // As when an exception unwinds between start() and wait() and the peer never sends: the
  // destructor must cancel the receive rather than wait for it. A private communicator keeps the
  // small (eager) sends of the ring, whose receives were cancelled, away from the other tests.
  const hympi::Comm comm = hympi::Comm::duplicate(MPI_COMM_WORLD);
  {
    std::vector<double> never_sent(8);
    hympi::PersistentRequests set;
    set.add_receive(never_sent, (world_rank() + 1) % world_size(), 9, comm.get());
    set.start();
  }
  {
    Ring ring(comm.get(), 8);
    ring.requests.start();
  }
  MPI_Barrier(comm.get());
  SUCCEED();
}

// Destroyed after main() has called MPI_Finalize: a destructor that still called MPI_Request_free
// would abort the process, and the test with it.
std::unique_ptr<Ring> outlives_mpi;

TEST(PersistentRequests, SetThatOutlivesMpiIsDestroyedSafely) {
  outlives_mpi = std::make_unique<Ring>(MPI_COMM_WORLD, 4);
  outlives_mpi->requests.start();
  outlives_mpi->requests.wait();
  EXPECT_EQ(outlives_mpi->requests.size(), 2u);
}

}  // namespace
