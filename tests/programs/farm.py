"""A task farm as Python users write one with mpi4py.futures: the launched rank is the manager and MPIPoolExecutor
starts its workers with MPI_Comm_spawn (a world of their own). Each task sums (i * k) % 7 over k < 100000; the
manager checks every result against its own sum and prints a rate.

    python3 farm.py TASKS WORKERS
"""

import sys
import time

from mpi4py.futures import MPIPoolExecutor


def task(i: int) -> int:
    return sum((i * k) % 7 for k in range(100_000))


def main() -> int:
    tasks, workers = int(sys.argv[1]), int(sys.argv[2])
    start = time.perf_counter()
    with MPIPoolExecutor(max_workers=workers) as pool:
        results = list(pool.map(task, range(tasks)))
    seconds = time.perf_counter() - start
    verified = results == [task(i) for i in range(tasks)]
    print(f"farm: {tasks} tasks on {workers} workers, results {'verified' if verified else 'WRONG'}")
    print(f"rate: {tasks / seconds:.3f} tasks/s")
    return 0 if verified else 1


if __name__ == "__main__":
    sys.exit(main())
