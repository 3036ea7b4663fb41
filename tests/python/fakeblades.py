"""A stand-in hympi-blades for sweep and report tests without MPI: it validates as the real app does (exit 2, one
line) and prints a HYMPI_RESULT whose per-phase times follow known coefficients (FAKE_BLADES_* below), so tests
know what the model must recover."""

from __future__ import annotations

from pathlib import Path

from fakeapps import _script, fake_bin_dir

# The fake's phases per iteration (stats/blades_model.py's terms): comp = COMP * share + OMP * g(T),
# halo = HALO_MSG * m_halo + WAIT * share * (s - 1) [m_halo > 0], blade = BLADE_MSG * m_blade + WAIT * share * (s - 1)
# [m_blade > 0] (s = max(1, N1*N2 / FAKE_CORES)); t_iter = their sum.
COMP, OMP, HALO_MSG, BLADE_MSG, WAIT = 1e-8, 2e-4, 5e-4, 3e-4, 5e-9

FAKE_BLADES = r'''#!PYTHON
import json, math, os, sys
COMP, OMP, HALO_MSG, BLADE_MSG, WAIT = COEFFICIENTS
args = sys.argv[1:]
def opt(name, default=None, n=1):
    if name not in args:
        return default
    i = args.index(name)
    return args[i + 1] if n == 1 else [int(v) for v in args[i + 1:i + 1 + n]]
blades = int(opt("--blades", "4"))
grid = opt("--grid", [16, 16, 8], 3)
inner = opt("--inner", "openmp")
n2_opt = int(opt("--n2", "1"))
def fail(text):
    print(f"hympi-blades: error: {text}", file=sys.stderr)
    sys.exit(2)
def layout(ranks, threads):
    if inner not in ("openmp", "mpi"):
        fail(f"--inner: unknown value '{inner}' (expected openmp, mpi)")
    if inner == "openmp":
        n1, n2 = ranks, threads
    else:
        if ranks % n2_opt:
            fail(f"{ranks} ranks are not N1 x N2 with --n2 {n2_opt}")
        n1, n2 = ranks // n2_opt, n2_opt
    if n1 > blades:
        fail(f"N1 = {n1} ranks over {blades} blades: N1 must be <= --blades")
    if n2 > grid[1]:
        fail(f"N2 = {n2} > J = {grid[1]}")
    return n1, n2
if "--validate-ranks" in args:
    layout(int(opt("--validate-ranks")), int(os.environ.get("OMP_NUM_THREADS", "1")))
    sys.exit(0)
ranks = int(os.environ.get("FAKE_RANKS") or 1)
threads = int(os.environ.get("OMP_NUM_THREADS", "1"))
n1, n2 = layout(ranks, threads)
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(f"{n1}x{n2}-{inner}\n")
cores = int(os.environ.get("FAKE_CORES", "2"))
s = max(1.0, n1 * n2 / cores)
t = n2 if inner == "openmp" else 1
g = 0.0 if t <= 1 else 1.0 + math.log2(t)
share = math.ceil(blades / n1) * grid[0] * math.ceil(grid[1] / n2) * grid[2]
comp = COMP * share + OMP * g
m_halo = 0.0 if inner != "mpi" or n2 <= 1 else (1.0 if n2 == 2 else 2.0)
wait = WAIT * share * (s - 1.0)
halo = HALO_MSG * m_halo + (wait if m_halo else 0.0)
blade = BLADE_MSG * (2.0 if n1 > 1 else 0.0) + (wait if n1 > 1 else 0.0)
iteration = comp + halo + blade
cells = blades * grid[0] * grid[1] * grid[2]
record = {"app": "blades", "problem": f"{blades}x{grid[0]}x{grid[1]}x{grid[2]}", "ranks": ranks, "threads": threads,
          "bind": os.environ.get("HYMPI_BIND"), "dist": os.environ.get("HYMPI_DIST"), "time_s": iteration * 10,
          "rate": cells / iteration / 1e6, "rate_unit": "Mcell/s", "verified": True, "comm_s": halo + blade,
          "comp_s": comp, "imbalance": 1.0, "max_rss_mib": 20.0 + 100.0 / ranks, "node_rss_mib": 20.0 * ranks + 100.0,
          "nodes": 1, "threads_default": False, "oversubscribed": n1 * n2 > cores, "shared_pus": 0, "phases": {},
          "hosts": ["fake"], "mpi_library": "fake MPI", "threads_level": "funneled", "topology_hash": "fake",
          "binding": [], "timestamp": "2026-01-01T00:00:00Z", "membind": "none",
          "metrics": {"blades": blades, "grid": grid, "inner": inner, "n1": n1, "n2": n2, "iterations": 10,
                      "iteration_s": iteration, "comp_iteration_s": comp, "group_halo_iteration_s": halo,
                      "blade_exchange_iteration_s": blade, "cells": cells,
                      "group_halo_bytes_per_iteration": 0.0, "blade_exchange_bytes_per_iteration": 0.0,
                      "state_checksum": "0123456789abcdef", "manufactured_error": 1e-4}}
print("HYMPI_RESULT " + json.dumps(record), flush=True)
'''


def fake_blades_bin(tmp: Path) -> dict[str, str]:
    """fake_bin_dir plus the stand-in hympi-blades; returns the env that uses them (fake mpirun included)."""
    env = fake_bin_dir(tmp)
    text = FAKE_BLADES.replace("COEFFICIENTS", repr((COMP, OMP, HALO_MSG, BLADE_MSG, WAIT)), 1)
    _script(Path(env["HYMPI_BIN_DIR"]) / "hympi-blades", text)
    return env
