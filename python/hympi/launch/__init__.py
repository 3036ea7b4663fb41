"""Building and running launch commands (mpirun/mpiexec locally; Slurm comes later)."""
