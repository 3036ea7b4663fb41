"""Two-level layouts (AKIE's P1h vs P2D in Jin et al., "High performance computing using MPI and OpenMP on multi-core
parallel systems", §3.3): N1 level-1 MPI ranks x N2 level-2 workers, the level 2
either OpenMP threads inside each rank (`--inner openmp`: hybrid) or N2 MPI ranks per group (`--inner mpi`: a 2-D
layout of communicators), one code base. A sweep over N1 x N2 x inner gives each launch its own level-2 arguments:

    openmp: ranks N1      x threads N2, app arguments --inner openmp
    mpi:    ranks N1 * N2 x threads 1,  app arguments --inner mpi --n2 N2

so equal launch shapes of the two modes (2x1 openmp, 2x1 mpi, 1x2 mpi: all 2 ranks x 1 thread) stay other items.
"""

from __future__ import annotations

from dataclasses import dataclass

from hympi.errors import UsageError
from hympi.params import choice

# Apps whose level 2 is chosen by --inner (and --n2 for the MPI mode).
TWO_LEVEL_APPS = ("blades",)
INNER_MODES = ("openmp", "mpi")
# One mode, checked as --inner's list parser checks each entry (hympi.sweep_options.INNER).
INNER_MODE = choice(INNER_MODES, "mode")
# The app options the expansion sets itself; the sweep's own app arguments must not set them too.
LEVEL_OPTIONS = ("--inner", "--n2")


@dataclass(frozen=True)
class TwoLevelLayout:
    """One N1 x N2 layout in one level-2 mode."""

    n1: int
    n2: int
    inner: str

    @property
    def ranks(self) -> int:
        """MPI ranks launched: N1 (openmp) or N1 x N2 (mpi)."""
        return self.n1 if self.inner == "openmp" else self.n1 * self.n2

    @property
    def threads(self) -> int:
        """OpenMP threads per rank launched: N2 (openmp) or 1 (mpi)."""
        return self.n2 if self.inner == "openmp" else 1

    @property
    def args(self) -> tuple[str, ...]:
        """The level-2 app arguments: --inner openmp, or --inner mpi --n2 N2."""
        return ("--inner", "openmp") if self.inner == "openmp" else ("--inner", "mpi", "--n2", str(self.n2))

    @property
    def label(self) -> str:
        """'2x2 mpi' (N1 x N2 and the mode)."""
        return f"{self.n1}x{self.n2} {self.inner}"


def expand(n1s: tuple[int, ...], n2s: tuple[int, ...], inners: tuple[str, ...]) -> tuple[TwoLevelLayout, ...]:
    """Every (N1, N2, inner), mode-major then N1, N2; UsageError for an unknown inner mode (the line --inner's
    declaration gives it)."""
    for inner in inners:
        INNER_MODE("--inner", inner)
    return tuple(TwoLevelLayout(n1, n2, inner) for inner in inners for n1 in n1s for n2 in n2s)


def sweep_axes(layouts: tuple[TwoLevelLayout, ...]) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[str, ...], ...]]:
    """(SweepParams.layouts, SweepParams.layout_args): the launch shape and level-2 arguments of each layout."""
    return tuple((x.ranks, x.threads) for x in layouts), tuple(x.args for x in layouts)


def check_options(app: str, ranks_given: bool, app_args: tuple[str, ...]) -> None:
    """Refuses (UsageError, one line) --n1/--n2/--inner for an app without two levels, next to --ranks/--threads,
    or with app arguments that set --inner/--n2 themselves."""
    if app not in TWO_LEVEL_APPS:
        raise UsageError(f"--n1/--n2/--inner apply to two-level apps ({', '.join(TWO_LEVEL_APPS)}), not {app}")
    if ranks_given:
        raise UsageError("--n1/--n2/--inner choose the ranks and threads themselves: drop --ranks/--threads")
    for arg in app_args:
        if arg in LEVEL_OPTIONS or any(arg.startswith(o + "=") for o in LEVEL_OPTIONS):
            raise UsageError(f"app argument {arg}: --n1/--n2/--inner set --inner and --n2 for every run themselves")


def of_run(ranks: int, threads: int, args: tuple[str, ...]) -> TwoLevelLayout | None:
    """The layout a run's launch shape and app arguments mean (the last --inner / --n2 win, as in the app's parser),
    None without a valid --inner or when the ranks are not N1 x N2."""
    inner: str | None = None
    n2: int | None = None
    for i, word in enumerate(args):
        name, value = word, args[i + 1] if i + 1 < len(args) else None
        if "=" in word and word.split("=", 1)[0] in LEVEL_OPTIONS:
            name, value = word.split("=", 1)
        if name == "--inner":
            inner = value
        elif name == "--n2" and value is not None and value.isdigit():
            n2 = int(value)
    if inner == "openmp":
        return TwoLevelLayout(ranks, threads, inner)
    if inner == "mpi":
        n2 = n2 or 1
        return TwoLevelLayout(ranks // n2, n2, inner) if n2 >= 1 and ranks % n2 == 0 else None
    return None
