"""A thread that samples the machine (hympi.busy.sample) while a run lasts, measuring the hympi process's own tree:
the launcher and every rank are its descendants, and one run goes at a time."""

from __future__ import annotations

import threading
from types import TracebackType

import psutil

from hympi.busy.accounting import Interference, interference
from hympi.busy.sample import Sample, take_sample

# Seconds between samples: the first and last decide the totals; the ones between keep the tree's time of
# descendants that end unwaited for. Finding the tree reads every process's parent (psutil): ~5 ms a sample on a
# busy 2-core VM, so 2 s keeps a 1.5 s run's overhead under 1 % (bench/interference, docs/performance.md).
SAMPLE_INTERVAL_S = 2.0


class Sampler:
    """`with Sampler() as s: run()`, then s.interference(pus): samples before, every `interval` seconds during and
    after the block."""

    def __init__(self, interval: float = SAMPLE_INTERVAL_S) -> None:
        self._interval = interval
        self._root = psutil.Process()
        self._samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="hympi-busy-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            sample = take_sample(self._root)
            if not self._stop.is_set():  # the closing sample is the last one
                self._samples.append(sample)

    def __enter__(self) -> Sampler:
        self._samples.append(take_sample(self._root))
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        self._samples.append(take_sample(self._root))

    @property
    def samples(self) -> tuple[Sample, ...]:
        """Every sample taken, in time order."""
        return tuple(self._samples)

    def interference(self, pus: frozenset[int] | None) -> Interference:
        """The other work on PUs `pus` (None: all) while the block ran."""
        return interference(self._samples, pus)
