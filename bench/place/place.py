#!/usr/bin/env python3
"""Placement at cluster scale (issue 20): `hympi place` time, peak memory and off-node share per size, against
the algorithm of an older revision (default: the dense one before the sparse rewrite) in the same run.

Usage: .venv/bin/python bench/place/place.py [--halo 512,1024,2048,4096,32768] [--irregular 512,1024,4096]
                                             [--node 'pack:2 core:32 pu:1'] [--baseline REV] [--baseline-cap 300]
                                             [--baseline-max 4096] [--cap 600] [--output FILE]

Matrices (volume 1 per message unless said otherwise):
  halo N       the 3D 7-point halo exchange (6 neighbours, not periodic) on the most cubic px x py x pz = N grid,
               rank = x + px*(y + py*z), as hympi.place.matrix.halo3d builds it;
  irregular N  an unstructured-mesh-like graph: N random points in the unit cube, every rank sending to its 6
               nearest neighbours a random volume in 1..999, rank numbers shuffled (fixed seed), so block
               placement cannot profit from the numbering.
Every matrix is placed on N / cores-per-node copies of the node (`synthetic:NODE`, full nodes). Each placement is
one `hympi place --matrix FILE --topology synthetic:NODE --nodes K --json` process (the user's command, including
interpreter start, reading the file and the topology); time is its wall time, peak memory its ru_maxrss
(getrusage of a small measuring parent, see MEASURE), off-node the share of the volume crossing nodes (tree-map;
block = --map-by core for reference). The baseline runs the same command with the code of git revision REV (its
python/ and contract.toml, extracted with git archive into a temporary directory), fed the dense text form of the
same matrix (the only form it reads), up to --baseline-max ranks and killed after --baseline-cap seconds ("> CAP"
in the table).
share ratio = tree-map off-node share / baseline off-node share (the target is <= 1.05).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hympi.errors import HympiError, UsageError
from hympi.place.matrix import CommMatrix, halo3d, write_coo, write_matrix
from hympi.place.tree import load_node_tree

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import REPO, hympi_here, parse_counts, reject

BASELINE = "deb7ffa"  # main before the sparse rewrite: dense matrices, greedy growing + Kernighan-Lin
NEIGHBOURS = 6


def parse_sizes(text: str, option: str, cores: int) -> list[int]:
    """Comma-separated rank counts, each a positive multiple of the cores per node; exits 2 naming a bad one."""
    sizes = parse_counts(text, option, empty_ok=True)
    for size in sizes:
        if size % cores:
            reject(option, f"{size} ranks do not fill nodes of {cores} cores")
    return sizes


def cubic_dims(n: int) -> tuple[int, int, int]:
    """px >= py >= pz with px*py*pz = n, as close to a cube as the divisors allow."""
    best = (n, 1, 1)
    for pz in range(1, round(n ** (1 / 3)) + 2):
        if n % pz:
            continue
        for py in range(pz, int((n // pz) ** 0.5) + 1):
            if (n // pz) % py == 0 and n // pz // py >= py:
                dims = (n // pz // py, py, pz)
                if dims[0] / dims[2] < best[0] / best[2]:
                    best = dims
    return best


def irregular(n: int, seed: int = 20) -> CommMatrix:
    """Each of n random points in the unit cube sends to its NEIGHBOURS nearest ones (volume 1..999), shuffled."""
    rng = np.random.default_rng(seed)
    points = rng.random((n, 3))
    src, dst = [], []
    for lo in range(0, n, 256):
        block = points[lo:lo + 256]
        d = ((block[:, None, :] - points[None, :, :]) ** 2).sum(axis=-1)
        d[np.arange(len(block)), np.arange(lo, lo + len(block))] = np.inf
        src.append(np.repeat(np.arange(lo, lo + len(block)), NEIGHBOURS))
        dst.append(np.argpartition(d, NEIGHBOURS, axis=1)[:, :NEIGHBOURS].ravel())
    perm = rng.permutation(n)
    s, t = perm[np.concatenate(src)], perm[np.concatenate(dst)]
    return CommMatrix.from_entries(n, s, t, rng.integers(1, 1000, len(s)).astype(float), f"irregular({n})")


@dataclass(frozen=True)
class Run:
    """One `hympi place` child: wall seconds, peak resident MiB, off-node shares (None when killed or failed)."""

    seconds: float
    peak_mib: float
    tree_map: float | None
    block: float | None
    note: str = ""


# Runs argv[3:] with a time limit and writes its wall seconds, exit code and peak resident memory to argv[2]. The
# placement runs as this small process's child because Linux carries a process's high-water mark across exec (and
# vfork): a child started straight from the benchmark would report the benchmark's own peak as its maxrss.
MEASURE = """
import json, resource, subprocess, sys, time
start = time.perf_counter()
try:
    code = subprocess.run(sys.argv[3:], timeout=float(sys.argv[1]), check=False).returncode
except subprocess.TimeoutExpired:
    code = None
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
with open(sys.argv[2], "w") as out:
    json.dump({"code": code, "seconds": seconds, "peak_mib": peak}, out)
"""


def run_place(pythonpath: Path, matrix: Path, node: str, nodes: int, cap: float) -> Run:
    """Runs `hympi place ... --json` with the hympi package under `pythonpath`, killed after `cap` seconds; the
    time and peak memory are the placement process's own (MEASURE)."""
    place = [*hympi_here(), "place", "--matrix", str(matrix), "--topology", f"synthetic:{node}", "--nodes", str(nodes),
             "--json"]
    report = matrix.with_suffix(".measure.json")
    proc = subprocess.run([sys.executable, "-c", MEASURE, str(cap), str(report), *place], capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(pythonpath)}, timeout=cap + 120,
                          check=False)
    measured = json.loads(report.read_text())
    report.unlink()
    seconds, peak = measured["seconds"], measured["peak_mib"]
    if measured["code"] is None:
        return Run(seconds, peak, None, None, f"> {cap:.0f} s")
    if measured["code"] != 0:
        return Run(seconds, peak, None, None, f"exit {measured['code']}: {proc.stderr[-300:].strip()}")
    maps = json.loads(proc.stdout)["mappings"]
    return Run(seconds, peak, maps["tree-map"]["shares"]["inter-node"], maps["block"]["shares"]["inter-node"])


def baseline_tree(rev: str, into: Path) -> Path:
    """python/ and contract.toml of git revision `rev` extracted under `into`; exits 2 for an unknown revision."""
    archive = into / "baseline.tar"
    proc = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", "-o", str(archive), rev, "python",
                           "contract.toml"], capture_output=True, text=True, timeout=120, check=False)
    if proc.returncode != 0:
        reject("--baseline", f"git archive {rev} failed: {' '.join(proc.stderr.split())}")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "python"


def fmt(value: float | None, spec: str) -> str:
    """A number, or '-' when there is none."""
    return "-" if value is None else format(value, spec)


def main() -> int:
    """Generates the matrices, runs both implementations per size, prints the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--halo", default="512,1024,2048,4096,32768", help="rank counts of the 3D halo matrices")
    parser.add_argument("--irregular", default="512,1024,4096", help="rank counts of the irregular matrices")
    parser.add_argument("--node", default="pack:2 core:32 pu:1", help="hwloc synthetic description of one node")
    parser.add_argument("--baseline", default=BASELINE, help="git revision whose algorithm is compared ('' = none)")
    parser.add_argument("--baseline-cap", type=float, default=300, help="seconds before a baseline run is killed")
    parser.add_argument("--baseline-max", type=int, default=4096, help="largest rank count given to the baseline")
    parser.add_argument("--cap", type=float, default=600, help="seconds before a run of this tree is killed")
    parser.add_argument("--output", type=Path, help="also write one JSON line per case here")
    args = parser.parse_args()
    if args.baseline_cap <= 0 or args.cap <= 0:
        reject("--cap", "caps must be > 0 seconds")
    try:
        cores = len(load_node_tree(f"synthetic:{args.node}").cores)
    except (UsageError, HympiError) as exc:
        reject("--node", str(exc))
    cases = [("halo", n) for n in parse_sizes(args.halo, "--halo", cores)]
    cases += [("irregular", n) for n in parse_sizes(args.irregular, "--irregular", cores)]
    if not cases:
        reject("--halo", "no sizes given")
    header = (f"{'matrix':<22} {'ranks':>6} {'nodes':>5} {'nnz':>7} | {'time s':>7} {'peak MiB':>8} {'off-node':>8} "
              f"{'block':>6} | {'base s':>7} {'base MiB':>8} {'base off':>8} | {'share ratio':>11}")
    with tempfile.TemporaryDirectory(prefix="hympi-place-bench-") as tmp:
        work = Path(tmp)
        old = baseline_tree(args.baseline, work) if args.baseline else None
        print(f"node synthetic:{args.node} ({cores} cores); baseline {args.baseline or 'none'} "
              f"(cap {args.baseline_cap:.0f} s, up to {args.baseline_max} ranks)")
        print(header)
        print("-" * len(header))
        for kind, n in cases:
            matrix = halo3d(cubic_dims(n)) if kind == "halo" else irregular(n)
            coo = work / f"{kind}-{n}.coo"
            write_coo(matrix, coo)
            new = run_place(REPO / "python", coo, args.node, n // cores, args.cap)
            base = None
            if old is not None and n <= args.baseline_max:
                dense = work / f"{kind}-{n}.txt"
                write_matrix(matrix, dense)
                base = run_place(old, dense, args.node, n // cores, args.baseline_cap)
                dense.unlink()
            ratio = (new.tree_map / base.tree_map if base and base.tree_map and new.tree_map is not None
                     else None)
            base_time = "-" if base is None else (base.note if base.tree_map is None else f"{base.seconds:.1f}")
            print(f"{matrix.source:<22} {n:>6} {n // cores:>5} {matrix.nnz:>7} | "
                  f"{new.note or format(new.seconds, '.1f'):>7} {new.peak_mib:>8.0f} {fmt(new.tree_map, '.4f'):>8} "
                  f"{fmt(new.block, '.4f'):>6} | {base_time:>7} {fmt(base.peak_mib if base else None, '.0f'):>8} "
                  f"{fmt(base.tree_map if base else None, '.4f'):>8} | {fmt(ratio, '.3f'):>11}", flush=True)
            if args.output:
                record = {"matrix": matrix.source, "ranks": n, "nodes": n // cores, "nnz": matrix.nnz,
                          "new": new.__dict__, "baseline": base.__dict__ if base else None, "share_ratio": ratio}
                with args.output.open("a") as out:
                    out.write(json.dumps(record) + "\n")
            coo.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
