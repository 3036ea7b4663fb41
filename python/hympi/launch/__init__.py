"""Building and running launch commands (mpirun/mpiexec locally, Slurm) and the MPI library's control variables
(launch.cvars)."""
