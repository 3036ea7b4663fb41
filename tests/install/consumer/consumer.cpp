// Uses the installed public API the way an application would: a synthetic hwloc topology, a periodic Cartesian
// decomposition, a face halo exchange and an exact global sum, each checked against a value computed here.
// Prints "consumer: OK ..." and exits 0, or names the first wrong value and exits 1. `--perturb` corrupts one
// owned point on rank 0 before the exchange, so the checks must fail (the test expects that run to fail).
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <exception>

#include "hympi/core/error.hpp"
#include "hympi/core/topology.hpp"
#include "hympi/grid/cart.hpp"
#include "hympi/grid/exact_sum.hpp"
#include "hympi/grid/halo.hpp"

namespace {

double value_at(long i, long j, long k) { return static_cast<double>(i + 100 * j + 10000 * k); }

/// Wrong values found on this rank (ghosts holding anything but their periodic neighbour's value).
long check(int argc, char** argv) {
  const bool perturb = argc > 1 && std::strcmp(argv[1], "--perturb") == 0;
  long wrong = 0;
  const hympi::Topology topo = hympi::Topology::from_synthetic("pack:2 core:4 pu:2");
  if (topo.packages() != 2 || topo.cores() != 8 || topo.pus() != 16) {
    std::fprintf(stderr, "consumer: synthetic topology has %d packages, %d cores, %d PUs (expected 2, 8, 16)\n",
                 topo.packages(), topo.cores(), topo.pus());
    ++wrong;
  }

  const std::array<long, 3> global{12, 10, 9};
  const hympi::CartDecomposition cart(MPI_COMM_WORLD, {global, {true, true, true}, {0, 0, 0}});
  hympi::Grid3D<double> grid(cart.local_box(), 1);
  const auto n = grid.extent();
  hympi::ExactSum sum;
  for (long k = 0; k < n[2]; ++k)
    for (long j = 0; j < n[1]; ++j)
      for (long i = 0; i < n[0]; ++i) {
        grid(i, j, k) = value_at(grid.global(0, i), grid.global(1, j), grid.global(2, k));
        sum.add(grid(i, j, k));
      }
  if (perturb && cart.rank() == 0) grid(0, 0, 0) += 1.0, sum.add(1.0);
  hympi::HaloExchange halo(cart, grid, hympi::HaloPattern::faces);
  halo.exchange(grid);
  // Every face ghost (one coordinate outside the block) holds the periodic neighbour's value.
  for (int d = 0; d < 3; ++d)
    for (long side : {-1L, n[static_cast<std::size_t>(d)]})
      for (long a = 0; a < n[static_cast<std::size_t>((d + 1) % 3)]; ++a)
        for (long b = 0; b < n[static_cast<std::size_t>((d + 2) % 3)]; ++b) {
          std::array<long, 3> local{};
          local[static_cast<std::size_t>(d)] = side;
          local[static_cast<std::size_t>((d + 1) % 3)] = a;
          local[static_cast<std::size_t>((d + 2) % 3)] = b;
          std::array<long, 3> g{};
          for (int e = 0; e < 3; ++e) {
            const auto u = static_cast<std::size_t>(e);
            g[u] = (grid.global(e, local[u]) + global[u]) % global[u];
          }
          const double expected = value_at(g[0], g[1], g[2]);
          const double got = grid(local[0], local[1], local[2]);
          if (got != expected) {
            if (wrong == 0)
              std::fprintf(stderr, "consumer: rank %d ghost (%ld,%ld,%ld) holds %g, expected %g\n", cart.rank(),
                           local[0], local[1], local[2], got, expected);
            ++wrong;
          }
        }

  // The global sum of i + 100 j + 10000 k over the grid, in closed form.
  sum.allreduce(cart.comm());
  const long points = global[0] * global[1] * global[2];
  const double expected_sum = static_cast<double>(points) * ((global[0] - 1) / 2.0 + 100 * (global[1] - 1) / 2.0 +
                                                             10000 * (global[2] - 1) / 2.0);
  if (sum.value() != expected_sum) {
    if (cart.rank() == 0) std::fprintf(stderr, "consumer: sum %.17g, expected %.17g\n", sum.value(), expected_sum);
    ++wrong;
  }
  return wrong;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long wrong = 1;
  try {
    wrong = check(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "consumer: rank %d: %s\n", rank, e.what());
  }
  long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0 && total == 0) std::printf("consumer: OK on %d ranks\n", size);
  MPI_Finalize();
  return total == 0 ? 0 : 1;
}
