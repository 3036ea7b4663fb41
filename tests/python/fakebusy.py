"""A stand-in for hympi.busy.sampler.Sampler whose readings the test chooses (test_busy measures the sampler
itself): each run it watches reads the next value of `cores`, the cores other work used beside it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from hympi.busy.accounting import Interference


class FakeSampler:
    """Sampler's interface: a context around one run, then what other work it saw on the run's PUs."""

    def __init__(self, cores: Iterator[float]) -> None:
        self._cores = cores

    def __enter__(self) -> FakeSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def interference(self, pus: object) -> Interference:
        cores = next(self._cores)
        return Interference(outside_cpu_s=cores, steal_s=0.0, outside_cores=cores)


def samplers(cores: Iterator[float]) -> Callable[[], FakeSampler]:
    """What replaces the Sampler class: every run watched reads the next of `cores`."""
    return lambda: FakeSampler(cores)
