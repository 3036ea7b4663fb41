"""hympi.store.owner: whether the process that owns a sweep, a tune or the tests' scratch directory still runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import psutil
import pytest

from hympi.store.owner import owner_alive, process_start

HOST = socket.gethostname()


def test_this_process_owns_with_its_own_start():
    start = process_start(os.getpid())
    assert start is not None
    assert owner_alive(HOST, os.getpid(), start)


def test_a_reused_pid_is_another_process():
    """The same pid with a start a second earlier: the owner died and the kernel gave its pid away."""
    start = float(process_start(os.getpid()) or "nan")
    assert not owner_alive(HOST, os.getpid(), f"{start - 1.0:.2f}")
    assert not owner_alive(HOST, os.getpid(), f"{start + 1.0:.2f}")


def test_a_start_in_clock_ticks_since_boot_as_recorded_before_psutil():
    """Stores written before: /proc's starttime, an integer of clock ticks; the same process is still alive."""
    ticks = round((psutil.Process().create_time() - psutil.boot_time()) * os.sysconf("SC_CLK_TCK"))
    assert owner_alive(HOST, os.getpid(), str(ticks))
    assert not owner_alive(HOST, os.getpid(), str(ticks + 1000))


def test_an_ended_process_and_a_zombie_are_dead():
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    start = process_start(child.pid)
    try:
        # Not reaped yet: once it has exited it is a zombie, still in the process table under its pid.
        deadline = time.monotonic() + 30
        while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not owner_alive(HOST, child.pid, start)
    finally:
        child.wait(timeout=30)
    assert not owner_alive(HOST, child.pid, start)


@pytest.mark.parametrize(("host", "pid"), [(None, 1), (HOST, None)], ids=["no host", "no pid"])
def test_no_owner_is_dead(host, pid):
    assert not owner_alive(host, pid, None)


def test_an_owner_on_another_host_counts_as_alive():
    assert owner_alive(f"not-{HOST}", 2147483646, "1.00")
