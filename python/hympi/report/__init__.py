"""The static HTML report: machine summary, per-app plots and tables, a recommendation from the data, and the
communication hierarchy from ping-pong runs. The writer is report.writer; this package imports nothing, so that a
section (report.analysis for the sweeps) comes without the others. Its statistics are hympi.stats's."""
