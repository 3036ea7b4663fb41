! The Fortran twin of pattern.c (mpif.h bindings): the same traffic, so the profiler test can
! expect the same matrix from a Fortran program.
program pattern
  implicit none
  include 'mpif.h'
  integer :: rank, n, nxt, prv, nxt2, prv2, ierr, k, it, rev
  integer :: rq(2), pers(2)
  integer, allocatable :: ibuf(:), irecv(:)
  double precision :: dsend(7), drecv(7), x, total
  character :: csend(100), crecv(100)
  integer(kind=8) :: lsend(2), lrecv(2)
  integer :: big(1200)
  double precision :: t0

  call mpi_init(ierr)
  call mpi_comm_rank(MPI_COMM_WORLD, rank, ierr)
  call mpi_comm_size(MPI_COMM_WORLD, n, ierr)
  nxt = mod(rank + 1, n)
  prv = mod(rank - 1 + n, n)
  nxt2 = mod(rank + 2, n)
  prv2 = mod(rank - 2 + 2 * n, n)

  ! 1. blocking: (rank+1)*10 integers to nxt
  allocate(ibuf((n + 1) * 10), irecv((n + 1) * 10))
  ibuf = rank
  call mpi_irecv(irecv, (prv + 1) * 10, MPI_INTEGER, prv, 1, MPI_COMM_WORLD, rq(1), ierr)
  call mpi_send(ibuf, (rank + 1) * 10, MPI_INTEGER, nxt, 1, MPI_COMM_WORLD, ierr)
  call mpi_wait(rq(1), MPI_STATUS_IGNORE, ierr)

  ! 2. nonblocking on a reversed sub-communicator: 7 doubles to nxt2
  call mpi_comm_split(MPI_COMM_WORLD, 0, n - 1 - rank, rev, ierr)
  do k = 1, 7
    dsend(k) = rank + 0.5d0 * (k - 1)
  end do
  call mpi_irecv(drecv, 7, MPI_DOUBLE_PRECISION, n - 1 - prv2, 2, rev, rq(1), ierr)
  call mpi_isend(dsend, 7, MPI_DOUBLE_PRECISION, n - 1 - nxt2, 2, rev, rq(2), ierr)
  call mpi_waitall(2, rq, MPI_STATUSES_IGNORE, ierr)
  if (drecv(7) /= prv2 + 3.0d0) call mpi_abort(MPI_COMM_WORLD, 1, ierr)
  call mpi_comm_free(rev, ierr)

  ! 3. (pattern.c's derived datatype) 6 integers = 24 bytes to nxt
  call mpi_irecv(irecv, 6, MPI_INTEGER, prv, 3, MPI_COMM_WORLD, rq(1), ierr)
  call mpi_isend(ibuf, 6, MPI_INTEGER, nxt, 3, MPI_COMM_WORLD, rq(2), ierr)
  call mpi_waitall(2, rq, MPI_STATUSES_IGNORE, ierr)

  ! 4. persistent: 100 characters to prv, 3 x mpi_start + 1 x mpi_startall
  csend = achar(97 + rank)
  call mpi_recv_init(crecv, 100, MPI_CHARACTER, nxt, 4, MPI_COMM_WORLD, pers(1), ierr)
  call mpi_send_init(csend, 100, MPI_CHARACTER, prv, 4, MPI_COMM_WORLD, pers(2), ierr)
  do it = 1, 3
    call mpi_start(pers(1), ierr)
    call mpi_start(pers(2), ierr)
    call mpi_waitall(2, pers, MPI_STATUSES_IGNORE, ierr)
  end do
  call mpi_startall(2, pers, ierr)
  call mpi_waitall(2, pers, MPI_STATUSES_IGNORE, ierr)
  if (crecv(100) /= achar(97 + nxt)) call mpi_abort(MPI_COMM_WORLD, 1, ierr)
  call mpi_request_free(pers(1), ierr)
  call mpi_request_free(pers(2), ierr)

  ! 5. sendrecv: 2 integer*8 to nxt; 6. MPI_PROC_NULL is not counted
  lsend = rank
  call mpi_sendrecv(lsend, 2, MPI_INTEGER8, nxt, 5, lrecv, 2, MPI_INTEGER8, prv, 5, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr)
  if (lrecv(2) /= prv) call mpi_abort(MPI_COMM_WORLD, 1, ierr)
  call mpi_send(lsend, 2, MPI_INTEGER8, MPI_PROC_NULL, 6, MPI_COMM_WORLD, ierr)

  ! 7. synchronous: one integer from rank 0 to rank n-1, after rank 0 spent 0.25 s computing
  if (rank == 0) then
    t0 = mpi_wtime()
    do while (mpi_wtime() - t0 < 0.25d0)
    end do
  end if
  if (n > 1 .and. rank == 0) call mpi_ssend(ibuf, 1, MPI_INTEGER, n - 1, 7, MPI_COMM_WORLD, ierr)
  if (n > 1 .and. rank == n - 1) call mpi_recv(irecv, 1, MPI_INTEGER, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)

  ! 8. in place: 1200 integers (4800 bytes) to nxt with mpi_sendrecv_replace
  big = rank
  call mpi_sendrecv_replace(big, 1200, MPI_INTEGER, nxt, 8, prv, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  if (big(1200) /= prv) call mpi_abort(MPI_COMM_WORLD, 1, ierr)

  ! 9. collectives
  call mpi_bcast(ibuf, 20, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  x = 1.0d0
  call mpi_allreduce(x, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (total /= n) call mpi_abort(MPI_COMM_WORLD, 1, ierr)
  call mpi_barrier(MPI_COMM_WORLD, ierr)
  call mpi_finalize(ierr)
end program pattern
