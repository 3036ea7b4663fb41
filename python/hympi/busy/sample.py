"""One reading of the machine's CPU accounting (psutil): busy and steal seconds per PU, and the CPU seconds a
process tree has used, stored and read back as JSON (tests/data/busy holds recorded ones)."""

from __future__ import annotations

import time
from dataclasses import dataclass

import psutil

from hympi.jsontypes import JsonObject


@dataclass(frozen=True)
class PuTimes:
    """Cumulative seconds of one PU since boot: `busy` (user, nice, system, irq, softirq; guest time is inside user)
    and `steal` (time the hypervisor gave this virtual CPU's slot to another guest; 0 where not reported)."""

    busy: float
    steal: float


@dataclass(frozen=True)
class Sample:
    """The machine at monotonic time `at`: every PU's cumulative times, indexed by the kernel's CPU number, and the
    CPU seconds used so far by the process tree being measured (tree_cpu_s)."""

    at: float
    pus: tuple[PuTimes, ...]
    tree_cpu_s: float

    def as_json(self) -> JsonObject:
        """JSON-ready form (from_json's inverse)."""
        return {"at": self.at, "tree_cpu_s": self.tree_cpu_s,
                "pus": [[p.busy, p.steal] for p in self.pus]}

    @classmethod
    def from_json(cls, data: JsonObject) -> Sample:
        """A sample written by as_json."""
        pus = data["pus"]
        assert isinstance(pus, list)
        return cls(at=float(data["at"]), pus=tuple(PuTimes(busy=float(b), steal=float(s)) for b, s in pus),
                   tree_cpu_s=float(data["tree_cpu_s"]))


def pu_times() -> tuple[PuTimes, ...]:
    """Every online PU's cumulative busy and steal seconds."""
    out = []
    for t in psutil.cpu_times(percpu=True):
        steal = float(getattr(t, "steal", 0.0))
        out.append(PuTimes(busy=t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0),
                           steal=steal))
    return tuple(out)


def tree_cpu_seconds(root: psutil.Process) -> float:
    """CPU seconds used by `root` and its descendants: each live one's own user and system time plus what its
    reaped children used (the kernel adds a child's times, its own reaped children's included, to the parent that
    waits for it), so a launcher's ranks count after they exit too."""
    total = 0.0
    for proc in (root, *root.children(recursive=True)):
        try:
            t = proc.cpu_times()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue  # ended between listing and reading: its parent's children times hold it once reaped
        total += t.user + t.system + t.children_user + t.children_system
    return total


def take_sample(root: psutil.Process) -> Sample:
    """The machine now, with `root`'s tree as the one measured."""
    return Sample(at=time.monotonic(), pus=pu_times(), tree_cpu_s=tree_cpu_seconds(root))
