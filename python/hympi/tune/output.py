"""The best configuration of a tune in forms users act on: an Open MPI mca-params.conf snippet, an MPICH
environment file, and the `hympi run` command with its layout flags."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hympi.errors import UsageError, unknown_name
from hympi.launch.layout import layout_words
from hympi.launch.mpirun import mpi_env_name
from hympi.store import Store, TuneRecord
from hympi.tune.declared import TOOLS, declared_names
from hympi.tune.options import FORMATS
from hympi.tune.results import Measured, Speedup, best, default_of, speedup, tune_results
from hympi.tune.space import Configuration
from hympi.tune.tuner import TuneParams


@dataclass(frozen=True)
class BestConfiguration:
    """A tune's best configuration with what the snippets say about it: program, machine, speedup over the
    default."""

    tune: TuneRecord
    machine: str
    mpi_library: str
    best: Measured
    default: Configuration
    speedup: Speedup


def best_of_tune(store: Store, tune_id: int | None) -> BestConfiguration:
    """The best configuration of tune `tune_id` (default: the latest tune); UsageError when there is no tune or
    no configuration of it has a score."""
    tunes = store.tunes()
    if not tunes:
        raise UsageError(f"no tune in {store.path} (run 'hympi tune run' first)")
    tune = store.tune(tune_id) if tune_id is not None else tunes[-1]
    results = tune_results(store, tune.id)
    top = best(results)
    if top is None:
        raise UsageError(f"tune {tune.id} has no configuration with an ok run")
    default = Configuration.from_key(str(tune.space.get("default", ""))) if "default" in tune.space \
        else results[0].config
    machine = store.machine(tune.machine_id)
    return BestConfiguration(tune, machine.hostname, machine.mpi_library, top, default,
                             speedup(top, default_of(results, default)))


def _header(found: BestConfiguration) -> list[str]:
    """The comment lines every snippet starts with: what was tuned, where, and how much better it is."""
    return [f"# hympi tune {found.tune.id}: best configuration of '{found.tune.program}' "
            f"({found.tune.strategy} search)",
            f"# machine {found.machine}, {found.mpi_library}",
            f"# speedup over the default ({found.default.label()}): {found.speedup.text}",
            f"# layout: {layout_words(found.best.config.ranks, found.best.config.threads)}, bind "
            f"{found.best.config.bind} (run it with: {run_command_text(found)})"]


# The MPI flavour (launch.mpirun.MPI_FLAVORS) each library format is written for.
FORMAT_FLAVORS = {"mca": "openmpi", "mpich": "mpich"}
DeclaredLookup = Callable[[str], "frozenset[str] | None"]


def tuned_flavor(mpi_library: str) -> str:
    """'mpich' or 'openmpi': the flavour of the library a tune ran on, from its version string."""
    lower = mpi_library.lower()
    return "mpich" if "mpich" in lower or "hydra" in lower else "openmpi"


def target_name(name: str, flavor: str) -> str:
    """How the library of `flavor` names parameter `name`: MPIR_CVAR_<NAME> (MPICH) or the MCA name (Open MPI)."""
    return mpi_env_name(name, "mpich") if flavor == "mpich" else name.removeprefix("OMPI_MCA_")


def check_declared(found: BestConfiguration, flavor: str, lookup: DeclaredLookup = declared_names) -> None:
    """Raises UsageError naming every parameter of the best configuration that the library of `flavor` does not
    declare. A tune's parameters were checked against the library it ran on, so only a snippet for the other
    flavour asks the target library (`lookup`) what it declares; no listing at all refuses every parameter."""
    params = found.best.config.mpi_params
    if not params or tuned_flavor(found.mpi_library) == flavor:
        return
    tool, library = TOOLS[flavor]
    declared = lookup(flavor)
    missing = [name for name, _ in params if declared is None or target_name(name, flavor) not in declared]
    if not missing:
        return
    tuned = found.mpi_library.split(",")[0].strip() or "another library"
    if declared is None:
        raise UsageError(f"cannot write {', '.join(missing)} for {library}: which parameters it declares is unknown "
                         f"here ({tool} is not installed or failed); the tune ran on {tuned}")
    raise UsageError(f"{library} does not declare {', '.join(target_name(n, flavor) for n in missing)} "
                     f"(parameters of {tuned}, tune {found.tune.id}): nothing written")


def mca_params(found: BestConfiguration) -> str:
    """An Open MPI mca-params.conf snippet: comment header, then 'name = value' per parameter."""
    lines = _header(found)
    params = found.best.config.mpi_params
    lines += [f"{name} = {value}" for name, value in params] or ["# (the library's defaults are best: set nothing)"]
    return "\n".join(lines) + "\n"


def mpich_env(found: BestConfiguration) -> str:
    """An MPICH environment file: comment header, then 'export MPIR_CVAR_NAME=value' per parameter."""
    lines = _header(found)
    params = found.best.config.mpi_params
    lines += [f"export {mpi_env_name(name, 'mpich')}={shlex.quote(value)}" for name, value in params] \
        or ["# (the library's defaults are best: set nothing)"]
    return "\n".join(lines) + "\n"


def run_flags(config: Configuration, app: str, app_args: tuple[str, ...], declared: Sequence[str] = ()) -> list[str]:
    """The `hympi run` argument list that runs `config`: -n, --threads, --bind, a program's `declared` flags
    (Program.flags: how it is judged, its standard input and variables), one --mpi-param per parameter."""
    cmd = ["hympi", "run", app, "-n", str(config.ranks), "--threads", str(config.threads), "--bind", config.bind,
           *declared]
    for name, value in config.mpi_params:
        cmd += ["--mpi-param", f"{name}={value}"]
    return [*cmd, "--", *app_args] if app_args else cmd


def run_command_text(found: BestConfiguration) -> str:
    """The `hympi run` command of the best configuration as shell text (a program of the user's own declared as its
    tune ran it)."""
    params = TuneParams.from_dict(found.tune.params)
    program = params.program_spec()
    declared = program.flags() if program is not None else []
    return shlex.join(run_flags(found.best.config, params.command, params.app_args, declared))


def render(found: BestConfiguration, fmt: str, lookup: DeclaredLookup = declared_names) -> str:
    """The snippet in format `fmt` (mca, mpich or flags); UsageError for another format, or for a parameter the
    format's library does not declare (check_declared)."""
    if fmt in FORMAT_FLAVORS:
        check_declared(found, FORMAT_FLAVORS[fmt], lookup)
    if fmt == "mca":
        return mca_params(found)
    if fmt == "mpich":
        return mpich_env(found)
    if fmt == "flags":
        return run_command_text(found) + "\n"
    raise UsageError(unknown_name('format', FORMATS, fmt))
