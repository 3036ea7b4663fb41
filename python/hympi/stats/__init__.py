"""Statistics and fitted models, below every package that measures or reports: the ratio of medians with its
bootstrap interval (stats.compare), the median of what runs recorded (stats.median) and the least-squares
performance models (stats.model, stats.blades_model). Imports only numpy and nothing of hympi above the foundation
modules."""
