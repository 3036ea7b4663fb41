"""A sweep's parameters, declared once (hympi.params; the layout's, shared with `hympi run`, in hympi.layout_options):
`hympi sweep` registers and resolves them, SweepParams checks its fields with them and sbatch_command spells them
again. Kept apart from hympi.sweep (numpy, the store, the statistics) so that building hympi's parser stays cheap."""

from __future__ import annotations

from collections.abc import Mapping

from hympi.contract import contract
from hympi.layout_options import BINDS, DIST, LAUNCHER, MEMBINDS, RANKS, THREADS, VIRTUAL_NODES
from hympi.params import (
    AUTO_MIN_REPEAT,
    CONFIDENCE,
    DISTURBED_ABOVE,
    MAX_REPEAT,
    MIN_TIME,
    OVERSUBSCRIBE,
    REPEAT,
    SEED,
    TIMEOUT,
    WARMUP,
    Param,
    Value,
    choice_list,
    integer_from,
    parse_int_list,
)
from hympi.twolevel import INNER_MODES, TWO_LEVEL_APPS

# Probes time many round trips inside one run with their own arguments: no warm-up run, no minimum time.
PROBES = ("pingpong",)
# --checkpoint-dir without --checkpoint-every: one checkpoint per this many steps (the cadence).
DEFAULT_CHECKPOINT_EVERY = 50


def checkpoint_apps() -> tuple[str, ...]:
    """The apps contract.toml declares with checkpoints = true."""
    return tuple(a.name for a in contract().apps if a.checkpoints)


def cross_layouts(ranks: tuple[int, ...], threads: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    """Every (ranks, threads) pair, ranks-major."""
    return tuple((r, t) for r in ranks for t in threads)


def _probe(values: Mapping[str, Value]) -> bool:
    """Whether the app swept is a probe (PROBES)."""
    return values.get("app") in PROBES


N1 = Param("n1", "--n1", f"two-level apps ({', '.join(TWO_LEVEL_APPS)}), instead of --ranks/--threads: "
           "comma-separated level-1 rank counts (default 1)", parse_int_list, metavar="N1,...")
N2 = Param("n2", "--n2", "two-level apps: comma-separated level-2 sizes, OpenMP threads per rank (--inner openmp) or "
           "ranks per group (--inner mpi) (default 1)", parse_int_list, metavar="N2,...")
INNER = Param("inner", "--inner", f"two-level apps: comma-separated level-2 modes from {', '.join(INNER_MODES)} "
              "(default both); openmp launches N1 ranks x N2 threads, mpi N1*N2 ranks x 1 thread with --n2 N2",
              choice_list(INNER_MODES, "mode"), metavar="MODE,...")
SWEEP_REPEAT = REPEAT.described(f"measured runs per layout, or auto: {AUTO_MIN_REPEAT}, then more rounds of the "
                                "layouts still in the noise of the best until it is separated or --max-repeat is spent "
                                "(default 1)", 1)
SWEEP_MIN_TIME = MIN_TIME.described(MIN_TIME.help, lambda values: 0.0 if _probe(values) else None)
SWEEP_WARMUP = WARMUP.described(f"{WARMUP.help} (never done for {', '.join(PROBES)})",
                                lambda values: not _probe(values))
SWEEP_OVERSUBSCRIBE = OVERSUBSCRIBE.described("also run layouts with ranks x threads > PUs")
CHECKPOINT_DIR = Param("checkpoint_dir", "--checkpoint-dir",
                       f"apps with checkpoints ({', '.join(checkpoint_apps())}): every run writes its checkpoint to "
                       "DIR/<run>.h5; a run that times out or is killed restarts from it when the same command runs "
                       "again (a sweep with a checkpoint directory always resumes); a run that ends removes its "
                       "checkpoint", lambda option, text: text, metavar="DIR")
CHECKPOINT_EVERY = Param("checkpoint_every", "--checkpoint-every",
                         f"with --checkpoint-dir: a checkpoint every N steps (default {DEFAULT_CHECKPOINT_EVERY})",
                         integer_from(1, "a number of steps"),
                         lambda values: DEFAULT_CHECKPOINT_EVERY if values.get("checkpoint_dir") else None,
                         metavar="N")

# Every parameter of `hympi sweep` that defines the sweep (SweepParams' fields), in the order they resolve.
SWEEP = (RANKS, THREADS, N1, N2, INNER, BINDS, DIST, MEMBINDS, SWEEP_REPEAT, MAX_REPEAT, CONFIDENCE, SWEEP_MIN_TIME,
         SEED, SWEEP_WARMUP, TIMEOUT, SWEEP_OVERSUBSCRIBE, VIRTUAL_NODES, LAUNCHER, CHECKPOINT_DIR, CHECKPOINT_EVERY,
         DISTURBED_ABOVE)
