"""Synthetic tuned programs written through the Store API: a small space over the recorded Open MPI cvars, one
exhaustive tune per program whose speedups follow a known rule of one profile feature, and the programs' profiles."""

from __future__ import annotations

import math
import tomllib
from collections.abc import Callable
from pathlib import Path

from conftest import tune_params
from fakeapps import REPO
from hympi.launch.cvars import Cvar, CvarListing, parse_listing
from hympi.store import Run, Store
from hympi.tune.features import FEATURE_NAMES, thread_check
from hympi.tune.space import Configuration, SearchSpace, parse_space

CVARS_JSON = REPO / "tests" / "data" / "mpit-openmpi-4.1.4.json"
SPACE_TOML = """
[layout]
ranks = [2, 4]
threads = [1]
bind = ["core"]
default = { ranks = 4 }

[mpi.btl_vader_eager_limit]
values = [1024, 65536]
unset = true

[mpi.btl_vader_single_copy_mechanism]
values = ["none"]
unset = true
"""
SPACE = tomllib.loads(SPACE_TOML)
SUMMARY = {"packages": 1, "numa_nodes": 1, "cores": 2, "pus": 2, "caches": [], "hash": "t"}
# (name, share of large all-to-all messages, second feature): the rule below makes the best configuration flip
# with the first one.
PROGRAMS = (("is --class S", 0.05, 0.2), ("is --class W", 0.25, 0.9), ("lu-mz --class S", 0.45, 0.5),
            ("bt-mz --class S", 0.6, 0.1), ("rb3d --size 32", 0.8, 0.7), ("spmv3d --size 32", 0.95, 0.4))


def listing() -> CvarListing:
    """The recorded Open MPI 4.1.4 listing (a CvarSource)."""
    return parse_listing(CVARS_JSON.read_text())


def cvars() -> dict[str, Cvar]:
    """The recorded Open MPI 4.1.4 control variables."""
    return listing().cvars


def space() -> SearchSpace:
    """12 configurations: ranks 2 or 4, eager limit unset/1 KiB/64 KiB, single copy unset/none."""
    return parse_space(SPACE, cvars())


def stored_space_json() -> dict[str, object]:
    """The space as a tune stores it."""
    return space().as_stored()


def rule(large: float, other: float, config: Configuration) -> float:
    """The true log speedup of `config` over a zero baseline: large all-to-all messages want a high eager limit and
    single copy on, small ones the opposite; 4 ranks help a little in proportion to the second feature."""
    params = config.params()
    eager = {"1024": -1.0, "65536": 1.0}.get(params.get("btl_vader_eager_limit", ""), 0.0)
    no_copy = 1.0 if params.get("btl_vader_single_copy_mechanism") == "none" else 0.0
    return 0.3 * (2 * large - 1) * eager + 0.2 * (1 - 2 * large) * no_copy + 0.05 * other * (config.ranks == 4)


def features(large: float, other: float, working_threads: int = 2) -> dict[str, float]:
    """A full feature dict with the two features the rule reads, and a thread check at 2 threads per rank that saw
    `working_threads` of them compute."""
    out = dict.fromkeys(FEATURE_NAMES, 0.0)
    out.update(alltoall_large=large, alltoall_small=1 - large, p2p_log_rate=2 + other, mpi_share=0.3 + 0.2 * other,
               ranks=4.0, ranks_per_node=4.0, threads=1.0, cores=2.0, numa_nodes=1.0, packages=1.0)
    return {**out, **thread_check(2, working_threads)}


def add_tune(store: Store, machine_id: int, program: str, strategy: str, configs: list[Configuration],
             log_speedup: Callable[[Configuration], float], repeats: int = 4,
             failed: tuple[Configuration, ...] = (), memory: Callable[[Configuration], float] | None = None,
             subject: tuple[tuple[str, str], ...] = ()) -> int:
    """A finished tune measuring `configs` (rate = 100 x exp(log_speedup), +-0.5 % per repeat); returns its id.
    `subject`: a program of your own's sweep fields, as `hympi tune run PATH` records them."""
    app, *args = program.split()
    params = tune_params(app=app, app_args=tuple(args), strategy=strategy, max_runs=len(configs), repeat=repeats,
                         subject=subject)
    tune = store.create_tune(machine_id, app, params.program, strategy, stored_space_json(), params.as_dict())
    searched = space()
    for config in configs:
        sweep = store.create_sweep(machine_id, app, params.sweep_params(config, searched).as_dict(), repeats,
                                   tune_id=tune.id)
        for rep in range(1, repeats + 1):
            rate = 100.0 * math.exp(log_speedup(config)) * (1 + 0.005 * ((rep % 3) - 1))
            ok = config not in failed
            record = {"rate": rate, "rate_unit": "Mop/s", "problem": "S", "verified": True,
                      "max_rss_mib": memory(config) if memory else 50.0} if ok else None
            store.add_run(Run(sweep.id, app, config.ranks, config.threads, config.bind, "compact", rep, tuple(args),
                              (), ("mpirun",), "ok" if ok else "failed", 0 if ok else 1, 1.0, record,
                              mpi_params=config.mpi_params))
        store.set_sweep_status(sweep.id, "finished")
    store.set_tune_status(tune.id, "finished")
    return tune.id


def _rule_of(large: float, other: float) -> Callable[[Configuration], float]:
    """rule() for one program."""
    return lambda config: rule(large, other, config)


def tuned_store(path: Path, programs: tuple[tuple[str, float, float], ...] = PROGRAMS,
                with_profiles: bool = True) -> Store:
    """A store with one exhaustive tune (and, with_profiles, one stored profile) per program."""
    store = Store.open(path)
    machine = store.ensure_machine("host", "t", "Open MPI 4.1.4", "gcc", dict(SUMMARY))
    configs = list(space().configurations())
    for program, large, other in programs:
        add_tune(store, machine.id, program, "exhaustive", configs, _rule_of(large, other))
        if with_profiles:
            store.add_profile(machine.id, program, program.split()[0], 4, 1, features(large, other),
                              {"format": "hympi-profile"})
    return store
