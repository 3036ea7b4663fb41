"""hympi: hybrid MPI + OpenMP layouts, measured and explained."""

__version__ = "0.1.0"
