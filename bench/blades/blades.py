#!/usr/bin/env python3
"""Hybrid vs two-level MPI on the blade row (issue 19; Jin et al., "High performance computing using MPI and OpenMP
on multi-core parallel systems", §4.4, Figs. 7 and 8): sweeps hympi-blades over
N1 x N2 layouts in both level-2 modes (`hympi sweep blades --n1 .. --n2 .. --inner openmp,mpi`), fits the phase
model of hympi.stats.blades_model and prints, per layout, measured vs model time per iteration with the relative
error (target: every layout within 15 %), then the MPI time / hybrid time table with its bootstrap interval.

Usage: .venv/bin/python bench/blades/blades.py [--layouts 1x1,1x2,2x1,2x2,4x1] [--repeat 5] [--blades 8]
                                               [--grid 32 32 16] [--iterations 50] [--min-time 0] [--db FILE]
                                               [--tolerance 0.15]

Builds nothing: run `cmake --build build --target hympi-blades` first (HYMPI_BIN_DIR or build/bin). Layouts with
more workers than cores run oversubscribed (--oversubscribe); the model knows the core count (hwloc). Exit 0 when
every run verified, every layout gave the same state checksum in both modes, and the model is within the tolerance
everywhere; 1 otherwise; 2 for bad options.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import tempfile
from pathlib import Path

from hympi.report.blades import BladesView, blades_views, layout_of
from hympi.store import Store
from hympi.topology import machine_summary

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
from common import hympi_here, parse_layouts, reject, require_positive

TOLERANCE = 0.15


def sweep(db: Path, n1s: list[int], n2: int, args: argparse.Namespace) -> int:
    """One `hympi sweep blades` for these N1 at one N2, both modes; returns its exit code (its output passes)."""
    cmd = [*hympi_here(), "sweep", "blades", "--n1", ",".join(map(str, n1s)), "--n2", str(n2), "--inner", "openmp,mpi",
           "--repeat", str(args.repeat), "--oversubscribe", "--min-time", f"{args.min_time:g}", "--db", str(db), "--",
           "--blades", str(args.blades), "--grid", *map(str, args.grid), "--iterations", str(args.iterations)]
    return subprocess.run(cmd, timeout=3600, check=False).returncode


def model_table(view: BladesView, tolerance: float) -> bool:
    """Prints measured vs model per layout; True when every layout is within `tolerance`."""
    model = view.model
    if model is None:
        print("model: fewer than 3 layouts with every phase measured")
        return False
    for fit in model.fits:
        terms = " + ".join(f"{c:.3g} x [{name}]" for (name, _), c in zip(fit.term.columns, fit.coefficients,
                                                                          strict=True))
        print(f"  {fit.term.name} = {terms}")
    print(f"{'mode':<7} {'N1xN2':>6} {'measured ms':>12} {'model ms':>10} {'comp':>8} {'halo':>8} {'blade':>8} "
          f"{'error':>8}  within {100 * tolerance:.0f} %")
    ok = True
    for p in model.predictions:
        inside = abs(p.error) <= tolerance
        ok &= inside
        print(f"{p.obs.inner:<7} {p.obs.n1:>3}x{p.obs.n2:<2} {p.obs.iteration_s * 1e3:>12.4g} {p.model * 1e3:>10.4g} "
              + "".join(f"{t * 1e3:>9.3g}" for t in p.terms)
              + f" {100 * p.error:>+7.1f} %  {'yes' if inside else 'NO'}")
    print(f"every layout within {100 * tolerance:.0f} %: {'yes' if ok else 'no'} "
          f"(worst {100 * model.worst:.1f} %)")
    return ok


def ratio_table(view: BladesView) -> None:
    """Prints MPI time / hybrid time per N1 x N2 and the sentence per layout."""
    print(f"{'N1xN2':>6} {'MPI/hybrid':>11} {'CI':>13}  verdict")
    for r in view.ratios:
        if r.ratio is None or r.low is None or r.high is None:
            print(f"{r.n1:>3}x{r.n2:<2} {'-':>11} {'-':>13}  too few runs")
            continue
        # The column says what the sentence says: an interval from fewer runs than a verdict needs decides nothing.
        verdict = "indistinguishable" if r.indistinguishable else f"too few runs ({r.fewest} a side)" if r.too_few \
            else ("hybrid faster" if r.ratio > 1 else "MPI faster")
        print(f"{r.n1:>3}x{r.n2:<2} {r.ratio:>11.3f} {r.low:>6.3f}-{r.high:<6.3f}  {verdict}")
    for line in view.why:
        print(f"  {line}")


def main(argv: list[str] | None = None) -> int:
    """Runs the sweeps, prints the tables; exit 1 on a failed run, differing checksums or a model outside."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--layouts", default="1x1,1x2,2x1,2x2,4x1", help="N1xN2 layouts, each in both modes")
    parser.add_argument("--repeat", type=int, default=5, help="measured rounds per layout (plus one warm-up)")
    parser.add_argument("--blades", type=int, default=8)
    parser.add_argument("--grid", type=int, nargs=3, default=[32, 32, 16], metavar=("I", "J", "K"))
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--min-time", type=float, default=0.0, help="minimum timed region per run (s; 0 = off)")
    parser.add_argument("--db", help="results database (default: a temporary one)")
    parser.add_argument("--tolerance", type=float, default=TOLERANCE, help="largest |model error| allowed")
    args = parser.parse_args(argv)
    layouts = parse_layouts(args.layouts, "N1xN2 (e.g. 2x2)")  # (N1, N2) each
    require_positive((("--repeat", args.repeat), ("--blades", args.blades), ("--iterations", args.iterations),
                      *((f"--grid {axis}", g) for axis, g in zip("IJK", args.grid, strict=True))))
    if args.repeat < 2:
        reject("--repeat", f"the ratio's interval needs >= 2 rounds, got {args.repeat}")
    if not (math.isfinite(args.tolerance) and args.tolerance > 0):
        reject("--tolerance", f"must be a number > 0, got {args.tolerance}")
    with tempfile.TemporaryDirectory(prefix="hympi-blades-") as tmp:
        db = Path(args.db) if args.db else Path(tmp) / "blades.db"
        cores = machine_summary().cores
        print(f"{cores} cores; layouts {args.layouts} in both modes; {args.repeat} rounds; db {db}", flush=True)
        failed = 0
        for n2 in sorted({n2 for _, n2 in layouts}):
            failed += sweep(db, sorted({n1 for n1, m in layouts if m == n2}), n2, args) != 0
        with Store.open(db, create=False) as store:
            runs = [r for r in store.runs() if r.app == "blades" and r.repeat > 0]
            machine_of = {s.id: s.machine_id for s in store.sweeps()}
        wanted = {(n1, n2) for n1, n2 in layouts}
        runs = [r for r in runs if (x := layout_of(r)) is not None and (x.n1, x.n2) in wanted]
        bad = [r for r in runs if r.status != "ok"]
        checksums = {str(r.record["metrics"].get("state_checksum")) for r in runs
                     if r.record and isinstance(r.record.get("metrics"), dict)}
        views = blades_views(runs, machine_of, dict.fromkeys(set(machine_of.values()), cores))
    ok = not failed and not bad and len(checksums) == 1 and len(views) == 1
    print(f"runs: {len(runs)}, not ok: {len(bad)}; state checksums: {', '.join(sorted(checksums)) or '-'} "
          f"({'identical' if len(checksums) == 1 else 'DIFFER'} across layouts and modes)")
    for view in views:
        print(f"\n{view.problem}")
        ok &= model_table(view, args.tolerance)
        print()
        ratio_table(view)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
