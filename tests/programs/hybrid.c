/* A hybrid MPI + OpenMP program of our own, standing in for a user's code in the tests (issue 32, item 6): hympi
 * did not build it and it never calls hympi, so whatever hympi learns about it comes from outside.
 *
 * It runs the explicit scheme for the 1-D heat equation u_t = u_xx on N interior points of [0, 1] with u = 0 at both
 * ends: u_i <- u_i + r (u_{i-1} - 2 u_i + u_{i+1}), r = 1/4. The points are split in contiguous blocks over the
 * ranks (one ghost point each side, exchanged every step) and each rank's block over its OpenMP threads. Started
 * from u_i = sin(pi i h), h = 1/(N+1), the discrete solution after T steps is exactly lambda^T sin(pi i h) with
 * lambda = 1 - 4 r sin^2(pi h / 2) (sin(pi i h) is an eigenvector of the scheme's matrix), so the result is checked
 * against a known value at every point, whatever the layout, and only rounding separates the two.
 *
 * Usage: hybrid N STEPS [--break]
 *   --break adds 1e-3 to one point after the initial condition is set, so the check must fail.
 * Prints (rank 0): the layout, the steps' time, the CPU seconds each of its threads spent in them, "rate: X
 * Mupdates/s" (N * STEPS point updates over the slowest rank's time) and "verification: SUCCESSFUL", or
 * "verification: FAILED ..." and exit 1. Bad arguments: one line and exit 2.
 * MPI calls are not checked one by one: MPI_COMM_WORLD keeps its default handler, MPI_ERRORS_ARE_FATAL. */
#include <errno.h>
#include <math.h>
#include <mpi.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const double r = 0.25;
/* Rounding grows about like STEPS * machine epsilon relative to the amplitude; --break's 1e-3 stays above 1e-5
 * for far more steps than a test runs. */
static const double tolerance = 1e-9;
static const double min_amplitude = 1e-3;

static double thread_seconds(void) {
  struct timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return (double)now.tv_sec + 1e-9 * (double)now.tv_nsec;
}

/* A positive count from argv, or 0 when `text` is not one. */
static long parse_count(const char *text) {
  char *end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || value <= 0) return 0;
  return value;
}

static int usage_error(int rank, const char *message, const char *value) {
  if (rank == 0) fprintf(stderr, "hybrid: %s: '%s' (usage: hybrid N STEPS [--break])\n", message, value);
  MPI_Finalize();
  return 2;
}

int main(int argc, char **argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);

  if (argc < 3 || argc > 4) return usage_error(rank, "expected N and STEPS", argc > 1 ? argv[1] : "");
  const long n = parse_count(argv[1]);
  if (n == 0) return usage_error(rank, "N is not a positive integer", argv[1]);
  const long steps = parse_count(argv[2]);
  if (steps == 0) return usage_error(rank, "STEPS is not a positive integer", argv[2]);
  const int broken = argc == 4;
  if (broken && strcmp(argv[3], "--break") != 0) return usage_error(rank, "unknown option", argv[3]);
  if (n < size) return usage_error(rank, "N is smaller than the number of ranks", argv[1]);

  /* This rank's points are the global indices first+1 .. first+local (1-based; 0 and N+1 are the ends). */
  const long local = n / size + (rank < n % size ? 1 : 0);
  const long first = rank * (n / size) + (rank < n % size ? rank : n % size);
  const double h = 1.0 / (double)(n + 1);
  const double pi = acos(-1.0);
  const double s = sin(pi * h / 2.0);
  const double amplitude = pow(1.0 - 4.0 * r * s * s, (double)steps);
  /* The check is relative to the amplitude: once the solution has decayed, rounding would dominate it. */
  if (amplitude < min_amplitude) return usage_error(rank, "STEPS decays the solution below 1e-3 for this N", argv[2]);
  double *u = calloc((size_t)local + 2, sizeof *u);
  double *next = calloc((size_t)local + 2, sizeof *next);
  if (u == NULL || next == NULL) {
    fprintf(stderr, "hybrid: rank %d cannot allocate %ld points\n", rank, local);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
#pragma omp parallel for schedule(static)
  for (long i = 1; i <= local; ++i) u[i] = sin(pi * (double)(first + i) * h);
  /* In the middle of rank 0's block: next to a boundary, where u is held at 0, the change would decay far faster. */
  if (broken && rank == 0) u[(local + 1) / 2] += 1e-3;

  const int left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
  const int right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  /* Each thread's CPU time over the steps, so that a test sees every thread working (on an oversubscribed machine
   * wall time cannot show it). */
  const int threads = omp_get_max_threads();
  double *thread_cpu = calloc((size_t)threads, sizeof *thread_cpu);
  if (thread_cpu == NULL) MPI_Abort(MPI_COMM_WORLD, 1);
#pragma omp parallel
  thread_cpu[omp_get_thread_num()] = -thread_seconds();
  MPI_Barrier(MPI_COMM_WORLD);
  const double start = MPI_Wtime();
  for (long step = 0; step < steps; ++step) {
    /* A ghost facing MPI_PROC_NULL is never received into, so it keeps calloc's 0: the boundary value. */
    MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 0, &u[local + 1], 1, MPI_DOUBLE, right, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(&u[local], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
#pragma omp parallel for schedule(static)
    for (long i = 1; i <= local; ++i) next[i] = u[i] + r * (u[i - 1] - 2.0 * u[i] + u[i + 1]);
    double *swap = u;
    u = next;
    next = swap;
  }
  double elapsed = MPI_Wtime() - start;
#pragma omp parallel
  thread_cpu[omp_get_thread_num()] += thread_seconds();
  MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

  double error = 0.0;
#pragma omp parallel for schedule(static) reduction(max : error)
  for (long i = 1; i <= local; ++i) {
    const double e = fabs(u[i] - amplitude * sin(pi * (double)(first + i) * h));
    if (e > error) error = e;
  }
  MPI_Allreduce(MPI_IN_PLACE, &error, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const double relative = error / amplitude;
  const int passed = relative <= tolerance;

  if (rank == 0) {
    printf("hybrid: %d ranks x %d threads, N = %ld, %ld steps\n", size, threads, n, steps);
    printf("time: %.6f s\n", elapsed);
    printf("thread CPU seconds:");
    for (int t = 0; t < threads; ++t) printf(" %.6f", thread_cpu[t]);
    printf("\n");
    printf("rate: %.1f Mupdates/s\n", (double)n * (double)steps / elapsed / 1e6);
    if (passed)
      printf("verification: SUCCESSFUL (max relative error %.3e)\n", relative);
    else
      printf("verification: FAILED (max relative error %.3e > %.0e)\n", relative, tolerance);
  }
  free(u);
  free(next);
  free(thread_cpu);
  MPI_Finalize();
  return passed ? 0 : 1;
}
