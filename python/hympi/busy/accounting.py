"""How much other work overlapped a run: from samples taken while it ran, the CPU seconds used on the PUs it
occupies by processes outside its process tree, plus steal.

Busy time on the run's PUs minus the tree's CPU time (clamped at 0) is the outside work there; the tree's time is
taken whole, wherever it ran, so a launcher or hympi itself running beside the layout's PUs only lowers the
estimate (a disturbance is never invented). Steal is added: time the hypervisor gave the run's virtual CPUs to
another guest is lost to the run just as well.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from hympi.busy.sample import Sample

# The kernel counts CPU time in clock ticks: each reading is up to one tick short.
TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Interference:
    """Other work during one run: `outside_cpu_s` CPU seconds on its PUs (steal included), `steal_s` of them
    stolen by the hypervisor, and `outside_cores`, the outside seconds per second of the run. `uncertainty_s` is
    what the readings' tick resolution alone can put into outside_cpu_s (not stored: the verdict is, as disturbed)."""

    outside_cpu_s: float
    steal_s: float
    outside_cores: float
    uncertainty_s: float = 0.0

    def disturbed(self, threshold: float) -> bool:
        """Whether the outside load exceeds `threshold` cores by more than the readings' resolution (a run of a
        few milliseconds cannot be judged: one tick of someone else's work would make it look disturbed)."""
        return self.outside_cores > threshold and self.outside_cpu_s > self.uncertainty_s


def interference(samples: Sequence[Sample], pus: frozenset[int] | None) -> Interference:
    """The interference between the first and the last of `samples` (in time order) on PUs `pus` (None, or a PU
    the samples do not have: every PU). The tree's time is its highest reading less its first: a descendant that
    ends without being waited for by the tree takes its time out of later readings."""
    first, last = samples[0], samples[-1]
    known = range(min(len(first.pus), len(last.pus)))
    chosen = list(known) if pus is None or any(p not in known for p in pus) else sorted(pus)
    busy = sum(last.pus[p].busy - first.pus[p].busy for p in chosen)
    steal = max(0.0, sum(last.pus[p].steal - first.pus[p].steal for p in chosen))
    tree = max(s.tree_cpu_s for s in samples) - first.tree_cpu_s
    outside = max(0.0, busy - max(0.0, tree)) + steal
    wall = last.at - first.at
    # Each PU's busy and steal and the tree's time, read at both ends.
    uncertainty = TICK_S * (4 * len(chosen) + 2)
    return Interference(outside_cpu_s=outside, steal_s=steal, outside_cores=outside / wall if wall > 0 else 0.0,
                        uncertainty_s=uncertainty)
