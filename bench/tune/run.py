#!/usr/bin/env python3
"""hympi tune benchmark (issue 15): guided vs exhaustive search, leave-one-program-out prediction, the report.

Usage: .venv/bin/python bench/tune/run.py [--parts guided,lopo,report] [--seeds 1] [--repeat 2] [--min-time 0.5]
                                          [--max-runs 12] [--ei-stop F] [--lopo-repeat 2] [--lopo-min-time 0.3]
                                          [--replay-seeds 20] [--recheck-pairs 4] [--work DIR]
                                          [--lu-mz-class W] [--is-class A] [--space APP=FILE ...]
                                          [--npb-ref-bin DIR]

* guided: for IS class A (bench/tune/is-48.toml, 51 configurations) and LU-MZ class W (bench/tune/lu-mz-48.toml,
  49 configurations), `hympi tune run --strategy exhaustive`, then `--strategy guided --max-runs N` for every seed,
  all in DIR/tune.db. Per guided tune: its best configuration, the exhaustive tune's median for that same
  configuration, their ratio to the exhaustive best (with stats.compare's interval) and the configurations used
  as a share of the exhaustive tune's. A pick that is not the exhaustive best is re-measured against it,
  alternately (--recheck-pairs runs each): the exhaustive best is the highest of ~50 noisy medians, so the ratio of
  the stored medians is biased against the pick. The fresh runs give two ratios: of their medians, and the trimmed
  geometric mean of each round's own (a round's two runs are seconds apart: the machine's drift between rounds drops
  out of it, stats.compare.paired_ratio_ci; a verdict from it needs --recheck-pairs 8). The search is also replayed
  (no launch) on the exhaustive tune's medians for --replay-seeds seeds: the same Search object, the measured landscape
  as its oracle.
* lopo: one common space (bench/tune/lopo-8.toml), an exhaustive tune of each of IS W, LU-MZ W, BT-MZ S, SP-MZ S,
  spmv3d CG 48^3, rb3d 32^3 and 64^3, the pencil solver at 32^3, the blade row (its defaults), LAMMPS's melt and HPC
  Challenge (third-party programs, docs/examples/hympi-programs.toml and docs/examples/hpcc/, when installed; they
  run in DIR, where HPCC reads its input and writes its results) and, with --npb-ref-bin DIR (or NPB_REF_BIN), the
  NPB3.4-MZ Fortran references bt-mz.W.x, sp-mz.W.x and lu-mz.W.x found there (bench/npb-mz/run.sh --classes W
  --build-only builds them) in DIR/lopo.db, then `hympi tune evaluate` (profiles each program once; needs
  HYMPI_PROFILE_LIB or the profiler next to the apps). The ratio to a program's best is biased against every pick
  but the best (the highest of 8 noisy medians), so each program's predicted and constant picks are measured
  again against its tune's best, alternately (--recheck-pairs runs each, by `hympi sweep` into DIR/recheck/), and
  the fresh ratios printed with stats.compare's verdicts, both of them as for guided.
* report: `hympi report` of both databases into DIR/report-*/ (kept out of the repository), checked for its Tuning
  section.

A tune already finished in the database with the same program, space, strategy, seed and options is not run
again; an interrupted one continues (--resume). Every command has a timeout. Environment: HYMPI (the hympi
command, default: the one next to this Python, else on PATH), HYMPI_BIN_DIR as for hympi itself.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from hympi.errors import UsageError
from hympi.launch.cvars import load_listing
from hympi.program import load_programs
from hympi.stats.compare import paired_ratio_text
from hympi.store import Store
from hympi.tune.options import DEFAULT_EI_STOP
from hympi.tune.predict import ProgramVerdict, evaluate, mean_ratio, narrowed_notes
from hympi.tune.results import Measured, best, measure, speedup, tune_results, usable_rate
from hympi.tune.search import Search, Stop
from hympi.tune.space import Configuration, SearchSpace, load_space

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for the scripts' shared helpers
import common
from common import hympi_command, options_of, parse_names, reject, require_positive, require_seconds

common.PROG = "bench"  # what this script's error lines have always begun with

HERE = Path(__file__).resolve().parent
PARTS = ("guided", "lopo", "report")
RUN_TIMEOUT_S = 120.0
# Launch cost besides the timed region (mpirun, MPI_Init, problem set-up, verification): for the command timeouts.
LAUNCH_S = 3.0


@dataclass(frozen=True)
class Program:
    """One tuned program: app (or a program of your own's path), its problem arguments, the space it is tuned over
    and the options `hympi tune run` needs for it (a program's --metric and --verify)."""

    app: str
    args: tuple[str, ...]
    space_file: Path
    options: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """As hympi names it ('is --class A'; a program by its file's name: 'lmp -in ...')."""
        return " ".join([Path(self.app).name, *self.args])


GUIDED_PROGRAMS = (Program("is", ("--class", "A"), HERE / "is-48.toml"),
                   Program("lu-mz", ("--class", "W"), HERE / "lu-mz-48.toml"))
LOPO_SPACE = HERE / "lopo-8.toml"
# Every hympi app that runs at one and at two ranks, at sizes of a few seconds a run, and LAMMPS (third_party()).
LOPO_PROGRAMS = tuple(Program(app, args, LOPO_SPACE) for app, args in (
    ("is", ("--class", "W")), ("lu-mz", ("--class", "W")), ("bt-mz", ("--class", "S")), ("sp-mz", ("--class", "S")),
    ("spmv3d", ("--global", "48", "48", "48")), ("rb3d", ("--size", "32")), ("rb3d", ("--size", "64")),
    ("pencil", ("--grid", "32", "32", "32")), ("blades", ())))


# The README's programs files: LAMMPS's melt and HPC Challenge as `hympi study --programs` runs them, each with its
# figure of merit and check (and HPCC's output file, where it writes them).
PROGRAMS_FILES = {"lammps-melt": common.REPO / "docs" / "examples" / "hympi-programs.toml",
                  "hpcc": common.REPO / "docs" / "examples" / "hpcc" / "hympi-programs.toml"}


def third_party(work: Path) -> tuple[Program, ...]:
    """LAMMPS's melt and HPC Challenge from PROGRAMS_FILES over the leave-one-program-out space, run in `work` (the
    tunes' working directory): the inputs a program names by path made absolute, those it reads from where it runs
    copied there; none, said on stderr, for a program that is not installed."""
    found = []
    for name, path in PROGRAMS_FILES.items():
        try:
            (entry,) = (r for r in load_programs(str(path)) if r.program.name == name)
        except UsageError as exc:
            print(f"bench: no third-party program {name} ({exc})", file=sys.stderr)
            continue
        program = entry.program
        source = Path(program.workdir)
        args = tuple(str((source / a).resolve()) if (source / a).is_file() else a for a in entry.args)
        for name_of_input in entry.inputs:
            if not any(Path(a).name == Path(name_of_input).name for a in entry.args):  # read from where it runs
                shutil.copy(source / name_of_input, work / Path(name_of_input).name)
        options = ("--metric", program.metric, "--metric-unit", program.metric_unit, "--better", program.better,
                   "--verify", program.verify, *(("--output-file", program.output_file) if program.output_file else ()))
        found.append(Program(program.path, args, LOPO_SPACE, options))
    return tuple(found)


# The NPB3.4-MZ Fortran reference, a third-party program that uses OpenMP (LAMMPS and HPCC as Debian builds them
# do not): its class is fixed when it is built (W: 1-2 s a run on 2 cores; class S times 0.02-0.2 s, less than its
# start-up), and it prints its rate and its verification.
NPB_REFERENCES = ("bt-mz.W.x", "sp-mz.W.x", "lu-mz.W.x")
NPB_REFERENCE_OPTIONS = ("--metric", r"Mop/s total\s*=\s*([0-9.]+)", "--metric-unit", "Mop/s", "--better", "higher",
                         "--verify", r"Verification\s*=\s*SUCCESSFUL")


def npb_references(directory: Path | None) -> tuple[Program, ...]:
    """The NPB_REFERENCES in `directory` over the leave-one-program-out space (none without a directory); one
    missing is said on stderr."""
    if directory is None:
        return ()
    found = []
    for name in NPB_REFERENCES:
        path = directory / name
        if path.is_file() and os.access(path, os.X_OK):
            found.append(Program(str(path.resolve()), (), LOPO_SPACE, NPB_REFERENCE_OPTIONS))
        else:
            print(f"bench: no NPB reference {path} (bench/npb-mz/run.sh --classes W --build-only builds it)",
                  file=sys.stderr)
    return tuple(found)


def with_class(programs: tuple[Program, ...], app: str, npb_class: str) -> tuple[Program, ...]:
    """`programs` with `app` (an NPB app) at class `npb_class` (LU-MZ class W takes ~3 s a run on 2 idle cores,
    2-4x that on busy ones)."""
    return tuple(replace(p, args=("--class", npb_class)) if p.app == app else p for p in programs)


def with_spaces(programs: tuple[Program, ...], spaces: dict[str, Path]) -> tuple[Program, ...]:
    """`programs` with the search spaces `spaces` names (by app) instead of their own (e.g. a many-core node's)."""
    return tuple(replace(p, space_file=spaces.get(p.app, p.space_file)) for p in programs)


def parse_spaces(items: list[str]) -> dict[str, Path]:
    """APP=FILE items of --space as {app: file}; exits 2 naming an unknown app or a missing file."""
    spaces = {}
    known = [p.app for p in GUIDED_PROGRAMS]
    for item in items:
        app, sep, file = item.partition("=")
        if not sep or app not in known:
            reject("--space", f"'{item}' is not APP=FILE with APP one of {', '.join(known)}")
        if not Path(file).is_file():
            reject("--space", f"{file}: no such file")
        spaces[app] = Path(file)
    return spaces


def run(command: list[str], timeout: float, log: Path | None = None) -> str:
    """Runs `command` (stdout to `log` and returned, stderr passed through), killed after `timeout` seconds; exits
    loudly on a non-zero status."""
    print(f"$ {' '.join(command)}", file=sys.stderr, flush=True)
    started = time.monotonic()
    try:
        done = subprocess.run(command, stdout=subprocess.PIPE, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        sys.exit(f"bench: timed out after {timeout:.0f} s: {' '.join(command)}")
    if log is not None:
        log.write_text(done.stdout)
    print(done.stdout, file=sys.stderr, end="", flush=True)
    print(f"  ({time.monotonic() - started:.0f} s)", file=sys.stderr, flush=True)
    if done.returncode != 0:
        sys.exit(f"bench: exit {done.returncode}: {' '.join(command)}")
    return done.stdout


@dataclass(frozen=True)
class Options:
    """What every tune of one part is run with."""

    repeat: int
    min_time: float
    oversubscribe: bool
    ei_stop: float = DEFAULT_EI_STOP


def finished_tune(db: Path, program: Program, space: SearchSpace, strategy: str, seed: int,
                  opts: Options) -> int | None:
    """The id of a finished tune in `db` equal to the one asked for, if there is one."""
    if not db.exists():
        return None
    with Store.open(str(db), create=False) as store:
        for tune in reversed(store.tunes()):
            p = tune.params
            if (tune.status == "finished" and tune.program == program.text and tune.strategy == strategy
                    and p["seed"] == seed and p["repeat"] == opts.repeat and p["min_time"] == opts.min_time
                    and (strategy != "guided" or p["ei_stop"] == opts.ei_stop)
                    and tune.space.get("source") == space.source):
                return tune.id
    return None


def tune(hympi: list[str], db: Path, cvars: Path, program: Program, space: SearchSpace, strategy: str, seed: int,
         opts: Options, max_runs: int | None, work: Path) -> int:
    """Runs (or finds, or resumes) one tune; returns its id."""
    found = finished_tune(db, program, space, strategy, seed, opts)
    if found is not None:
        print(f"bench: tune {found} ({program.text}, {strategy}, seed {seed}) already finished in {db}",
              file=sys.stderr)
        return found
    configs = max_runs or len(space.configurations())
    command = [*hympi, "tune", "run", program.app, "--space", str(program.space_file), "--strategy", strategy,
               "--seed", str(seed), "--repeat", str(opts.repeat), "--min-time", f"{opts.min_time:g}",
               "--timeout", f"{RUN_TIMEOUT_S:g}", "--cvars", str(cvars), "--db", str(db), "--resume", *program.options]
    if opts.oversubscribe:
        command.append("--oversubscribe")
    if max_runs is not None:
        command += ["--max-runs", str(max_runs), "--ei-stop", f"{opts.ei_stop:g}"]
    command += ["--", *program.args]
    what = f"{strategy}-{seed}" + (f"-ei{opts.ei_stop:g}" if strategy == "guided" else "")
    problem = "-".join(Path(a).name.strip("-") for a in program.args)
    log = work / f"tune-{Path(program.app).name}-{problem}-{what}.log"
    # Generous: every launch may take its timeout; the guard is for a hang of hympi itself.
    run(command, configs * (1 + opts.repeat) * (RUN_TIMEOUT_S + LAUNCH_S) + 600, log)
    found = finished_tune(db, program, space, strategy, seed, opts)
    if found is None:
        sys.exit(f"bench: the tune of {program.text} ({strategy}, seed {seed}) did not finish")
    return found


def results(db: Path, tune_id: int) -> list[Measured]:
    """The tune's measured configurations."""
    with Store.open(str(db), create=False) as store:
        return tune_results(store, tune_id)


def runs_of(measured: list[Measured]) -> int:
    """Measured runs (warm-ups not counted)."""
    return sum(m.runs for m in measured)


def replay(space: SearchSpace, scores: dict[Configuration, float | None], seed: int, max_runs: int,
           ei_stop: float) -> tuple[Configuration, int]:
    """Guided search with the exhaustive tune's medians as its oracle: its best configuration and how many it
    measured."""
    search = Search(space, "guided", seed, max_runs, ei_stop)
    seen: dict[Configuration, float | None] = {}
    while not isinstance(decision := search.propose(seen), Stop):
        seen[decision.config] = scores[decision.config]
    return max((c for c in seen if seen[c] is not None), key=lambda c: seen[c] or 0.0), len(seen)


def guided_part(hympi: list[str], work: Path, cvars: Path, seeds: list[int], opts: Options, max_runs: int,
                replay_seeds: int, recheck_pairs: int, programs: tuple[Program, ...]) -> None:
    """Exhaustive and guided tunes of `programs` (IS A and LU-MZ W); prints the comparison tables."""
    db = work / "tune.db"
    listing = load_listing(str(cvars))
    rows = []
    replays = []
    noise = []
    for program in programs:
        space = load_space(str(program.space_file), listing.cvars, listing.library)
        size = len(space.configurations())
        exhaustive_id = tune(hympi, db, cvars, program, space, "exhaustive", seeds[0], opts, None, work)
        exhaustive = results(db, exhaustive_id)
        by_config = {m.config: m for m in exhaustive}
        top = best(exhaustive)
        default = by_config[space.default]
        assert top is not None and default.score is not None and top.score is not None
        rows.append((program.text, "exhaustive", exhaustive_id, "-", len(exhaustive), size, runs_of(exhaustive),
                     top.config.label(), top.score, top.score, 1.0, speedup(top, default).text, "-"))
        for seed in seeds:
            guided_id = tune(hympi, db, cvars, program, space, "guided", seed, opts, max_runs, work)
            guided = results(db, guided_id)
            pick = best(guided)
            assert pick is not None and pick.score is not None
            same = by_config[pick.config]
            ratio = (same.score or 0.0) / top.score
            versus = "same configuration" if same.config == top.config else speedup(same, top).text
            if same.config != top.config and recheck_pairs > 0:
                fresh = remeasure(hympi, work, cvars, program, [pick.config, top.config], recheck_pairs, opts)
                again = fresh.versus(pick.config, top.config)
                versus += f"; re-measured alternately, {recheck_pairs} runs each: {again}"
            rows.append((program.text, "guided", guided_id, str(seed), len(guided), size, runs_of(guided),
                         pick.config.label(), pick.score, same.score or 0.0, ratio, speedup(pick, default).text,
                         versus))
        spreads = sorted((max(m.rates) - min(m.rates)) / statistics.median(m.rates) for m in exhaustive
                         if len(m.rates) >= 2)
        if spreads:
            noise.append((program.text, len(spreads), statistics.median(spreads), spreads[-1]))
        scores = {m.config: m.score for m in exhaustive}
        picks = [replay(space, scores, seed, max_runs, opts.ei_stop) for seed in range(1, replay_seeds + 1)]
        ratios = [(scores[c] or 0.0) / top.score for c, _ in picks]
        used = [n for _, n in picks]
        replays.append((program.text, len(picks), statistics.median(ratios), min(ratios),
                        sum(r >= 0.95 for r in ratios), statistics.mean(used), size))
    print(f"\n### guided vs exhaustive ({opts.repeat} measured runs per configuration after a warm-up, "
          f"--min-time {opts.min_time:g}; score = median rate)\n")
    print("| program | strategy | tune | seed | configurations | % of space | measured runs | best configuration "
          "| its score | exhaustive's median for it | / exhaustive best | speedup vs default | vs exhaustive best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (prog, strategy, tid, seed_text, n, size, nruns, label, own, exh, ratio, vs_default, vs_best) in rows:
        print(f"| {prog} | {strategy} | {tid} | {seed_text} | {n} | {100.0 * n / size:.1f} % | {nruns} | {label} "
              f"| {own:.4g} | {exh:.4g} | {ratio:.3f} | {vs_default} | {vs_best} |")
    for prog, n, med, worst in noise:
        print(f"\n{prog}: run-to-run spread (max - min) / median of the exhaustive tune's {n} configurations: "
              f"median {100.0 * med:.1f} %, largest {100.0 * worst:.1f} %")
    print(f"\n### guided replayed on the exhaustive medians (no launch; --max-runs {max_runs}, "
          f"--ei-stop {opts.ei_stop:g})\n")
    print("| program | seeds | median ratio pick/best | worst ratio | seeds >= 0.95 "
          "| mean configurations (% of space) |")
    print("|---|---|---|---|---|---|")
    for prog, n, med, worst, hits, mean_used, size in replays:
        print(f"| {prog} | {n} | {med:.3f} | {worst:.3f} | {hits}/{n} "
              f"| {mean_used:.1f} ({100.0 * mean_used / size:.1f} %) |")


@dataclass(frozen=True)
class Remeasured:
    """What `remeasure` measured: each configuration's Measured, and its rate in each round (None where that run
    does not count: failed, disturbed), so that two configurations are also compared round by round."""

    measured: dict[Configuration, Measured]
    rounds: dict[Configuration, tuple[float | None, ...]]

    def versus(self, pick: Configuration, top: Configuration) -> str:
        """The fresh medians' ratio with its verdict (speedup), then the trimmed geometric mean of the rounds' own
        ratios with its interval over the rounds where both counted (stats.compare.paired_ratio_text): a round's two
        runs are seconds apart, so the machine's drift between rounds drops out of it."""
        text = speedup(self.measured[pick], self.measured[top]).text
        return f"{text}; per round: {paired_ratio_text(self.rounds[pick], self.rounds[top])}"


def remeasure(hympi: list[str], work: Path, cvars: Path, program: Program, configs: list[Configuration],
              pairs: int, opts: Options) -> Remeasured:
    """`configs` of `program` measured again by `hympi sweep` as its tune measured them (`opts`), one run per
    configuration per round, the order reversed every other round, after one warm-up round: fresh runs, free of the
    selection that made one of them its tune's best (the highest of many noisy medians), and alike in what the
    machine did meanwhile."""
    folder = work / "recheck" / "-".join(Path(a).name.strip("-") for a in (program.app, *program.args))
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    dbs = {config: folder / f"{index}.db" for index, config in enumerate(configs)}
    for index in range(pairs + 1):
        for config in configs if index % 2 == 0 else configs[::-1]:
            db = dbs[config] if index > 0 else folder / "warm-up.db"
            command = [*hympi, "sweep", program.app, "--ranks", str(config.ranks), "--threads", str(config.threads),
                       "--bind", config.bind, *(f"--mpi-param={n}={v}" for n, v in config.mpi_params),
                       *(["--cvars", str(cvars)] if config.mpi_params else []),  # refused without a parameter
                       "--repeat", "1", "--no-warmup", "--min-time", f"{opts.min_time:g}", "--timeout",
                       f"{RUN_TIMEOUT_S:g}", "--db", str(db), *program.options,
                       *(["--oversubscribe"] if opts.oversubscribe else []), "--", *program.args]
            run(command, RUN_TIMEOUT_S + 120)
    measured, rounds = {}, {}
    for config, db in dbs.items():
        with Store.open(str(db), create=False) as store:
            runs = store.runs()  # one per round, in the order run
        measured[config] = measure(config, runs)
        rounds[config] = tuple(usable_rate(run) for run in runs)
    return Remeasured(measured=measured, rounds=rounds)


def recheck_lopo(hympi: list[str], work: Path, cvars: Path, programs: tuple[Program, ...], space: SearchSpace,
                 verdicts: list[ProgramVerdict], pairs: int, opts: Options) -> None:
    """Each held-out program's predicted and constant picks measured again against its tune's best, alternately
    (`remeasure`); prints the ratios of the fresh medians, each with stats.compare's verdict, and their means."""
    by_label = {c.label(): c for c in space.configurations()}
    by_text = {p.text: p for p in programs}
    rows = []
    for v in verdicts:
        top = by_label[v.best]
        picks = [by_label[v.predicted], *([by_label[v.baseline]] if v.baseline is not None else [])]
        if v.program not in by_text or all(p == top for p in picks):
            rows.append((v, None, None))
            continue
        configs = list(dict.fromkeys([top, *picks]))
        fresh = remeasure(hympi, work, cvars, by_text[v.program], configs, pairs, opts)
        rows.append((v, (speedup(fresh.measured[picks[0]], fresh.measured[top]), fresh.versus(picks[0], top)),
                     (speedup(fresh.measured[picks[-1]], fresh.measured[top]), fresh.versus(picks[-1], top))
                     if v.baseline is not None else None))
    print(f"\n### the picks measured again against each program's tune-best configuration ({pairs} alternating "
          f"runs each after a warm-up round, --min-time {opts.min_time:g}; ratio of medians, then the rounds' own "
          "ratios, 95 % CI)\n")
    print("| program | tune's best | predicted / best | constant pick / best |")
    print("|---|---|---|---|")
    predicted_ratios: list[float] = []
    constant_ratios: list[float] = []
    for v, predicted, constant in rows:
        texts = []
        for pick, label, ratios in ((predicted, v.predicted, predicted_ratios),
                                    (constant, v.baseline, constant_ratios)):
            if label == v.best:
                texts.append("the same configuration")
                ratios.append(1.0)
            elif pick is None:
                texts.append("-")
            elif pick[0].ratio is None:
                texts.append(f"no ratio ({pick[0].text})")
            else:
                texts.append(pick[1])
                ratios.append(pick[0].ratio)
        print(f"| {v.program} | {v.best} | {texts[0]} | {texts[1]} |")
    if predicted_ratios and constant_ratios:
        print(f"\nmean of the fresh ratios: predicted {statistics.mean(predicted_ratios):.3f} over "
              f"{len(predicted_ratios)} programs, constant pick {statistics.mean(constant_ratios):.3f} over "
              f"{len(constant_ratios)} (a pick equal to the tune's best counts 1)")


def lopo_part(hympi: list[str], work: Path, cvars: Path, opts: Options, lu_class: str,
              npb_ref_bin: Path | None, recheck_pairs: int) -> None:
    """Exhaustive tunes of every program over the common space, then the leave-one-program-out evaluation."""
    db = work / "lopo.db"
    listing = load_listing(str(cvars))
    space = load_space(str(LOPO_SPACE), listing.cvars, listing.library)
    programs = (*with_class(LOPO_PROGRAMS, "lu-mz", lu_class), *third_party(work), *npb_references(npb_ref_bin))
    for program in programs:
        tune(hympi, db, cvars, program, space, "exhaustive", 1, opts, None, work)
    out = run([*hympi, "tune", "evaluate", "--db", str(db), "--cvars", str(cvars), "--timeout", "300"], 3600,
              work / "evaluate.log")
    print(f"\n### leave-one-program-out (`hympi tune evaluate`; {opts.repeat} measured runs per configuration, "
          f"--min-time {opts.min_time:g})\n")
    print("```")
    print(out.rstrip())
    print("```")
    with Store.open(str(db), create=False) as store:
        verdicts, notes = evaluate(store, lambda: listing.cvars)
    print("\n| program | predicted | best measured speedup | predicted's measured speedup | ratio | baseline ratio |")
    print("|---|---|---|---|---|---|")
    for v in verdicts:
        measured = f"{v.measured:.3f}" if v.measured is not None else "not measured"
        ratio_text = f"{v.ratio:.3f}" if v.ratio is not None else "-"
        base_text = f"{v.baseline_ratio:.3f}" if v.baseline_ratio is not None else "-"
        print(f"| {v.program} | {v.predicted} | {v.best_speedup:.3f} | {measured} | {ratio_text} | {base_text} |")
    mean, base = mean_ratio(verdicts), mean_ratio(verdicts, baseline=True)
    if mean is not None and base is not None:
        print(f"\nmean ratio predicted/best {mean:.3f}, constant baseline {base:.3f}")
    for note in narrowed_notes(verdicts):
        print(note)
    for note in notes:
        print(f"left out: {note}")
    if recheck_pairs > 0:
        recheck_lopo(hympi, work, cvars, programs, space, verdicts, recheck_pairs, opts)


def report_part(hympi: list[str], work: Path, cvars: Path) -> None:
    """Renders the report of each database and checks it has a Tuning section."""
    for name in ("tune", "lopo"):
        db = work / f"{name}.db"
        if not db.exists():
            continue
        out = work / f"report-{name}"
        run([*hympi, "report", "--db", str(db), "--out", str(out), "--cvars", str(cvars)], 900)
        html = (out / "index.html").read_text()
        print(f"\nreport of {db.name}: {out / 'index.html'} ({len(html)} bytes), Tuning section "
              f"{'present' if 'Tuning' in html else 'MISSING'}")


def main() -> int:
    """Runs the parts asked for; tables in markdown on stdout, progress on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default=",".join(PARTS), help="of " + ",".join(PARTS))
    parser.add_argument("--programs", default=",".join(p.app for p in GUIDED_PROGRAMS),
                        help="guided part: which of its programs (is, lu-mz), in this order")
    parser.add_argument("--lu-mz-class", default="W", choices=("S", "W", "A"), help="LU-MZ's class in both parts")
    parser.add_argument("--is-class", default="A", choices=("S", "W", "A", "B"), help="IS's class (guided part)")
    parser.add_argument("--space", action="append", default=[], metavar="APP=FILE",
                        help="guided part: tune APP over FILE instead of its space in bench/tune (repeatable)")
    parser.add_argument("--seeds", default="1", help="comma-separated seeds of the guided tunes (the first also "
                                                     "seeds the exhaustive tune's record)")
    parser.add_argument("--repeat", type=int, default=2, help="measured runs per configuration (guided part)")
    parser.add_argument("--min-time", type=float, default=0.5, help="seconds of timed region per run (guided part)")
    parser.add_argument("--max-runs", type=int, default=12, help="guided budget in configurations")
    parser.add_argument("--ei-stop", type=float, default=DEFAULT_EI_STOP,
                        help="guided: stop below this expected relative improvement (0: spend the whole budget)")
    parser.add_argument("--lopo-repeat", type=int, default=2, help="measured runs per configuration (lopo part)")
    parser.add_argument("--lopo-min-time", type=float, default=0.3, help="seconds of timed region (lopo part)")
    parser.add_argument("--replay-seeds", type=int, default=20, help="seeds of the replayed guided search")
    parser.add_argument("--recheck-pairs", type=int, default=4,
                        help="re-measure a guided pick that is not the exhaustive best against it, and each "
                             "program's predicted and constant picks against its tune's best (lopo part), "
                             "alternately, this many runs each (0: off)")
    parser.add_argument("--npb-ref-bin", type=Path, default=os.environ.get("NPB_REF_BIN") or None,
                        help="lopo part: a folder holding the NPB3.4-MZ Fortran references bt-mz.W.x, sp-mz.W.x, "
                             "lu-mz.W.x, tuned as programs of their own (env NPB_REF_BIN)")
    parser.add_argument("--work", type=Path, default=Path(os.environ.get("WORK", "/tmp/hympi-tune-bench")))
    args = parser.parse_args()
    parts = parse_names(args.parts, PARTS, "--parts", "part")
    apps = parse_names(args.programs, (p.app for p in GUIDED_PROGRAMS), "--programs", "program")
    chosen = {p.app: p for p in with_spaces(with_class(with_class(GUIDED_PROGRAMS, "lu-mz", args.lu_mz_class), "is",
                                                     args.is_class), parse_spaces(args.space))}
    # In the order given: a run cut short (the node script's budget) has tuned the first ones.
    programs = tuple(chosen[app] for app in dict.fromkeys(apps))
    try:
        seeds = [int(s) for s in args.seeds.split(",") if s]
    except ValueError:
        reject("--seeds", f"'{args.seeds}' is not a comma-separated list of integers")
    if not seeds:
        reject("--seeds", "no seed given")
    if args.recheck_pairs < 0:
        reject("--recheck-pairs", f"must be >= 0, got {args.recheck_pairs}")
    require_positive(options_of(args, "repeat", "lopo_repeat", "max_runs", "replay_seeds"))
    require_seconds(options_of(args, "min_time", "lopo_min_time", "ei_stop"), zero_ok=True)
    if args.npb_ref_bin is not None and not args.npb_ref_bin.is_dir():
        reject("--npb-ref-bin", f"'{args.npb_ref_bin}' is not a directory")
    hympi = hympi_command()
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)  # where the tuned programs run: a program that reads or writes files where it runs does so here
    cvars = work / "cvars.json"
    if not cvars.exists():
        cvars.write_text(run([*hympi, "tune", "params", "--json"], 120))
    if "guided" in parts:
        guided_part(hympi, work, cvars, seeds, Options(args.repeat, args.min_time, True, args.ei_stop), args.max_runs,
                    args.replay_seeds, args.recheck_pairs, programs)
    if "lopo" in parts:
        npb_ref_bin = args.npb_ref_bin.resolve() if args.npb_ref_bin else None
        lopo_part(hympi, work, cvars, Options(args.lopo_repeat, args.lopo_min_time, False), args.lu_mz_class,
                  npb_ref_bin, args.recheck_pairs)
    if "report" in parts:
        report_part(hympi, work, cvars)
    return 0


if __name__ == "__main__":
    sys.exit(main())
