"""hympi tune: MPI control variables and layout searched together (space, strategies, results, output)."""
