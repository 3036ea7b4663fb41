"""Stop signals as exceptions: SIGTERM (a batch system's or `kill`'s stop) and SIGHUP (the terminal closed) raise
StoppedBySignal, SIGINT KeyboardInterrupt, so that the launch in flight is killed with its whole process group
(launch.mpirun) and what was measured is recorded, where otherwise hympi would die and leave the program it started
running (a program that never called MPI_Init is no job mpirun tears down)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from hympi.errors import StoppedBySignal

# Signals that end hympi as killed by them (exit 128 + the signal); SIGINT stays Python's KeyboardInterrupt.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class _State:
    """The signals received while stop_signals is in force, and whether raising is deferred (a launch starting)."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self.deferred = 0


_STATE = _State()


def _interruption(signum: int) -> KeyboardInterrupt:
    """What a stop signal raises: StoppedBySignal for SIGTERM and SIGHUP, KeyboardInterrupt for SIGINT."""
    return StoppedBySignal(signum) if signum in STOP_SIGNALS else KeyboardInterrupt()


def _handler(signum: int, frame: FrameType | None) -> None:
    _STATE.received.append(signum)
    if not _STATE.deferred:
        raise _interruption(signum)


def stop_if_signalled() -> None:
    """Raises what a stop signal received under stop_signals raises, if one came (once raised, it stays raised:
    every later check raises it again, so a loop cannot run on past it)."""
    if _STATE.received:
        raise _interruption(_STATE.received[0])


@contextmanager
def stop_signals() -> Iterator[Callable[[], None]]:
    """Turns SIGTERM and SIGHUP into StoppedBySignal (and SIGINT, where Python's own handler has it, into
    KeyboardInterrupt); yields stop_if_signalled, to call between runs. A signal the caller ignores stays ignored
    (`nohup`, SIGINT under `cmd &`). Nested uses share the outer one's handlers.

    Python runs a handler between any two bytecodes, also inside the at-fork callbacks that subprocess runs while it
    starts a launch, where the exception is printed as unraisable and dropped: the handler notes the signal, and
    stop_if_signalled raises it again."""
    current = {signum: signal.getsignal(signum) for signum in (*STOP_SIGNALS, signal.SIGINT)}
    if _handler in current.values() or threading.current_thread() is not threading.main_thread():
        yield stop_if_signalled  # in force already (a sweep inside a command), or signals are not this thread's
        return
    defaults: dict[int, object] = {**dict.fromkeys(STOP_SIGNALS, signal.SIG_DFL),
                                   signal.SIGINT: signal.default_int_handler}
    previous = {signum: signal.signal(signum, _handler) for signum, before in current.items()
                if before is defaults[signum]}
    _STATE.received.clear()
    try:
        yield stop_if_signalled
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)
        _STATE.received.clear()


@contextmanager
def stop_deferred() -> Iterator[None]:
    """While a launch starts (subprocess.Popen): a stop signal is noted, not raised, so that it cannot come out of
    Popen after the fork with the child started and nobody holding it to kill; call stop_if_signalled once the
    launch is held."""
    _STATE.deferred += 1
    try:
        yield
    finally:
        _STATE.deferred -= 1
