"""Which process owns a sweep, a tune or a scratch directory while it runs, and whether that process still does.

A process is named by its host, its pid and its start time (psutil's create_time, seconds since the epoch, as text
with two decimals): a pid the kernel has since given to another process has another start time.
"""

from __future__ import annotations

import os
import socket

import psutil

# psutil's create_time is the start in clock ticks since boot plus the boot time: equal for one process at every
# call, to the tick (10 ms); a reused pid starts later than that.
SAME_START_S = 0.05


def process_start(pid: int) -> str | None:
    """The start time of process `pid` as recorded with what it owns, or None where it cannot be read."""
    try:
        return f"{psutil.Process(pid).create_time():.2f}"
    except psutil.Error:
        return None


def _recorded_start(start: str) -> float:
    """A recorded start time in seconds since the epoch. Owners recorded before psutil named them give clock ticks
    since boot (an integer, /proc's starttime), converted with this boot's time."""
    if "." in start:
        return float(start)
    return int(start) / os.sysconf("SC_CLK_TCK") + psutil.boot_time()


def owner_alive(host: str | None, pid: int | None, start: str | None) -> bool:
    """Whether the process that owns something still runs: the same pid alive (not a zombie) with the same start
    time. An owner on another host counts as alive (this host cannot tell); no owner is dead."""
    if pid is None or host is None:
        return False
    if host != socket.gethostname():
        return True
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        now = process.create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:
        return True  # it exists, owned by another user
    try:
        return start is None or abs(now - _recorded_start(start)) < SAME_START_S
    except ValueError:  # not a start this module wrote: the pid alone decides
        return True
