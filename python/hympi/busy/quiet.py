"""The quiet check before a sweep or study measures: a short probe of what runs beside hympi, one line when the
machine is busy, and an optional wait for it to calm down."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import psutil

from hympi.busy.accounting import interference
from hympi.busy.sample import take_sample

# Seconds of the probe; inside a batch allocation (exclusive cores, usually) a short one suffices.
PROBE_S = 1.0
PROBE_IN_ALLOCATION_S = 0.2
# Processes named in the busy line.
TOP = 3


@dataclass(frozen=True)
class Load:
    """What the probe saw: the cores used outside hympi's own process tree (steal included) and the busiest other
    processes as (name, cores)."""

    outside_cores: float
    top: tuple[tuple[str, float], ...]

    def line(self) -> str:
        """'the machine is busy: 1.9 cores used by other processes (cc1plus 0.98, cc1plus 0.95, ninja 0.01)'."""
        named = ", ".join(f"{name} {cores:.2f}" for name, cores in self.top)
        return (f"the machine is busy: {self.outside_cores:.2f} cores used by other processes"
                + (f" ({named})" if named else ""))


def _process_times() -> dict[tuple[int, float], tuple[str, float]]:
    """(pid, start time) -> (name, CPU seconds) of every process that can be read."""
    out: dict[tuple[int, float], tuple[str, float]] = {}
    for proc in psutil.process_iter(["name", "cpu_times", "create_time"]):
        info = proc.info
        times = info.get("cpu_times")
        if times is None or info.get("create_time") is None:
            continue
        out[(proc.pid, float(info["create_time"]))] = (str(info.get("name") or proc.pid), times.user + times.system)
    return out


def probe(seconds: float) -> Load:
    """The load outside hympi's process tree over `seconds`, and the processes that caused most of it."""
    root = psutil.Process()
    own = {root.pid, *(p.pid for p in root.children(recursive=True))}
    before = _process_times()
    first = take_sample(root)
    time.sleep(seconds)
    last = take_sample(root)
    after = _process_times()
    wall = last.at - first.at
    # A process born during the probe (a compiler a build just started) used all its time in it.
    used = [(name, (cpu - before.get(key, (name, 0.0))[1]) / wall) for key, (name, cpu) in after.items()
            if key[0] not in own and cpu > before.get(key, (name, 0.0))[1]]
    top = tuple(sorted(used, key=lambda x: x[1], reverse=True)[:TOP])
    return Load(outside_cores=interference((first, last), None).outside_cores, top=top)


def quiet_start(threshold: float, wait_s: float, short: bool, say: Callable[[str], None],
                measure: Callable[[float], Load] = probe) -> Load:
    """Probes the machine (PROBE_S, or PROBE_IN_ALLOCATION_S when `short`) and, while it is busy above `threshold`
    cores, probes again until `wait_s` seconds have passed; says one line when it starts busy (and one when it
    calmed down, or did not). Returns the last probe's load."""
    length = PROBE_IN_ALLOCATION_S if short else PROBE_S
    load = measure(length)
    if load.outside_cores <= threshold:
        return load
    waiting = f"; waiting up to {wait_s:g} s for it to calm down" if wait_s > 0 else \
        "; measuring anyway, a run beside other work marked disturbed (--wait-quiet S waits for it; --ignore-load " \
        "skips this check)"
    say(f"{load.line()}{waiting}")
    if wait_s <= 0:
        return load
    deadline = time.monotonic() + wait_s
    while load.outside_cores > threshold and time.monotonic() < deadline:
        load = measure(length)
    if load.outside_cores <= threshold:
        say(f"the machine is quiet now ({load.outside_cores:.2f} cores used by other processes)")
    else:
        say(f"still busy after {wait_s:g} s: {load.line().removeprefix('the machine is busy: ')}; measuring anyway "
            "(runs overlapping other work are marked disturbed)")
    return load
