/* A manager-worker MPI program of the kind mpi4py.futures and many task farms are: the launched ranks start one
 * worker with MPI_Comm_spawn, which sums 1..n and sends the sum back; rank 0 checks it and prints a rate. The
 * worker lingers before MPI_Finalize, so that it finalizes after its parents: a profiler that let the worker's world
 * write the profile would leave the worker's 1-rank matrix in place of the launched job's.
 *
 *   spawn N   (the worker runs as: spawn --worker N) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm parent;
  MPI_Comm_get_parent(&parent);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (parent != MPI_COMM_NULL) {
    const long n = atol(argv[argc - 1]);
    double sum = 0.0;
    for (long i = 1; i <= n; ++i) sum += (double)i;
    if (rank == 0) MPI_Send(&sum, 1, MPI_DOUBLE, 0, 0, parent);
    MPI_Comm_disconnect(&parent);
    const struct timespec linger = {0, 300000000};
    nanosleep(&linger, NULL);
    MPI_Finalize();
    return 0;
  }
  const long n = argc > 1 ? atol(argv[1]) : 1000000;
  char count[32];
  snprintf(count, sizeof count, "%ld", n);
  char* worker_args[] = {"--worker", count, NULL};
  const double t0 = MPI_Wtime();
  MPI_Comm workers;
  MPI_Comm_spawn(argv[0], worker_args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &workers, MPI_ERRCODES_IGNORE);
  double sum = 0.0;
  if (rank == 0) MPI_Recv(&sum, 1, MPI_DOUBLE, 0, 0, workers, MPI_STATUS_IGNORE);
  MPI_Bcast(&sum, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  MPI_Comm_disconnect(&workers);
  const double seconds = MPI_Wtime() - t0;
  if (rank == 0) {
    const double expected = 0.5 * (double)n * (double)(n + 1);
    printf("ranks: %d, worker sum %s\n", size, sum == expected ? "verified" : "WRONG");
    printf("rate: %.3f sums/s\n", 1.0 / seconds);
  }
  MPI_Finalize();
  return sum == 0.5 * (double)n * (double)(n + 1) ? 0 : 1;
}
