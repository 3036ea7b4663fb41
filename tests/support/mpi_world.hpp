#pragma once
// Test helper shared by the MPI test suites.
#include <mpi.h>

namespace hympi::test {

/// This process's rank and the size of MPI_COMM_WORLD.
struct World {
  int rank = 0, size = 1;
  World() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
};

}  // namespace hympi::test
