/* A known traffic pattern for the profiler test (tests/python/test_profile.py computes the
 * expected matrix from the same rules). Every message kind the profiler claims to count is used:
 * blocking, synchronous, nonblocking on a reordered sub-communicator, a derived datatype,
 * persistent (MPI_Start and MPI_Startall), MPI_Sendrecv, MPI_PROC_NULL, MPI_Sendrecv_replace and three
 * collectives. Rank 0 also spins 0.25 s outside MPI before step 7, so every other rank waits that
 * long inside MPI (rank n-1 in MPI_Recv, the others in MPI_Bcast): the test checks the MPI time. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "pattern: wrong data in %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  const int next = (rank + 1) % n, prev = (rank - 1 + n) % n;
  const int next2 = (rank + 2) % n, prev2 = (rank - 2 + 2 * n) % n;

  /* 1. blocking: (rank+1)*10 ints to next */
  int* ibuf = calloc((size_t)n * 10, sizeof(int));
  int* irecv = calloc((size_t)n * 10, sizeof(int));
  for (int k = 0; k < (rank + 1) * 10; ++k) ibuf[k] = rank;
  MPI_Request rq[2];
  MPI_Irecv(irecv, (prev + 1) * 10, MPI_INT, prev, 1, MPI_COMM_WORLD, &rq[0]);
  MPI_Send(ibuf, (rank + 1) * 10, MPI_INT, next, 1, MPI_COMM_WORLD);
  MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
  check(irecv[(prev + 1) * 10 - 1] == prev, "blocking send");

  /* 2. nonblocking on a communicator with reversed rank order: 7 doubles to next2 */
  MPI_Comm rev;
  MPI_Comm_split(MPI_COMM_WORLD, 0, n - 1 - rank, &rev);
  double dsend[7], drecv[7];
  for (int k = 0; k < 7; ++k) dsend[k] = rank + 0.5 * k;
  MPI_Irecv(drecv, 7, MPI_DOUBLE, n - 1 - prev2, 2, rev, &rq[0]);
  MPI_Isend(dsend, 7, MPI_DOUBLE, n - 1 - next2, 2, rev, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  check(drecv[6] == prev2 + 3.0, "Isend on sub-communicator");
  MPI_Comm_free(&rev);

  /* 3. derived datatype: 2 x contiguous(3 ints) = 24 bytes to next */
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_INT, &three);
  MPI_Type_commit(&three);
  int tsend[6] = {rank, rank, rank, rank, rank, rank}, trecv[6];
  MPI_Irecv(trecv, 2, three, prev, 3, MPI_COMM_WORLD, &rq[0]);
  MPI_Isend(tsend, 2, three, next, 3, MPI_COMM_WORLD, &rq[1]);
  MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
  check(trecv[5] == prev, "derived datatype");
  MPI_Type_free(&three);

  /* 4. persistent: 100 chars to prev, started 3 times with MPI_Start and once with MPI_Startall */
  char csend[100], crecv[100];
  memset(csend, 'a' + rank, sizeof csend);
  MPI_Request pers[2];
  MPI_Recv_init(crecv, 100, MPI_CHAR, next, 4, MPI_COMM_WORLD, &pers[0]);
  MPI_Send_init(csend, 100, MPI_CHAR, prev, 4, MPI_COMM_WORLD, &pers[1]);
  for (int it = 0; it < 3; ++it) {
    MPI_Start(&pers[0]);
    MPI_Start(&pers[1]);
    MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
  }
  MPI_Startall(2, pers);
  MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
  check(crecv[99] == 'a' + next, "persistent");
  MPI_Request_free(&pers[0]);
  MPI_Request_free(&pers[1]);

  /* 5. Sendrecv: 2 int64 to next; 6. MPI_PROC_NULL (not counted) */
  long long lsend[2] = {rank, rank}, lrecv[2];
  MPI_Sendrecv(lsend, 2, MPI_LONG_LONG, next, 5, lrecv, 2, MPI_LONG_LONG, prev, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  check(lrecv[1] == prev, "Sendrecv");
  MPI_Send(lsend, 2, MPI_LONG_LONG, MPI_PROC_NULL, 6, MPI_COMM_WORLD);

  /* 7. synchronous: one int from rank 0 to rank n-1, after rank 0 spent 0.25 s computing */
  if (rank == 0) {
    const double t0 = MPI_Wtime();
    while (MPI_Wtime() - t0 < 0.25) {
    }
  }
  if (n > 1 && rank == 0) MPI_Ssend(lsend, 1, MPI_INT, n - 1, 7, MPI_COMM_WORLD);
  if (n > 1 && rank == n - 1) MPI_Recv(lrecv, 1, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

  /* 8. in place: 1200 ints (4800 B) to next with MPI_Sendrecv_replace */
  int big[1200];
  for (int k = 0; k < 1200; ++k) big[k] = rank;
  MPI_Sendrecv_replace(big, 1200, MPI_INT, next, 8, prev, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  check(big[1199] == prev, "Sendrecv_replace");

  /* 9. collectives, listed separately: Bcast of 20 ints from 0, Allreduce of 1 double, Barrier */
  MPI_Bcast(ibuf, 20, MPI_INT, 0, MPI_COMM_WORLD);
  double x = 1.0, sum = 0.0;
  MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  check(sum == n, "Allreduce");
  MPI_Barrier(MPI_COMM_WORLD);
  free(ibuf);
  free(irecv);
  MPI_Finalize();
  return 0;
}
