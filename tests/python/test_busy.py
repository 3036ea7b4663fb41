"""hympi.busy: the accounting of other work on recorded samples, the quiet check, and sweeps with and without a
process spinning beside them (those measure the real machine: marked quiet_machine, run alone after the parallel
pass, skipped when the machine is busy before they start, and when they fail while other work ran beside them)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from rich.console import Console

import skips
from fakeapps import InProcessLauncher, fake_bin_dir, launch_env, launch_ranks
from hympi.busy.accounting import TICK_S, Interference, interference
from hympi.busy.quiet import PROBE_S, Load, probe, quiet_start
from hympi.busy.sample import PuTimes, Sample
from hympi.export import rows, write_csv
from hympi.launch.mpirun import RunOutcome
from hympi.params import DEFAULT_DISTURBED_ABOVE
from hympi.place.tree import load_node_tree
from hympi.report.analysis import AppGroup, group_runs, recommend, verdict
from hympi.report.html import GroupFigures, render
from hympi.report.quiet import quiet_sentence
from hympi.store import Run, Store
from hympi.sweep import SweepParams, measured_samples, open_sweep, plan, run_sweep, still_open

DATA = Path(__file__).resolve().parents[1] / "data" / "busy"


def _recorded() -> list[Sample]:
    return [Sample.from_json(s) for s in json.loads((DATA / "run-on-pus-0-1.json").read_text())["samples"]]


def test_other_work_on_the_runs_pus_from_recorded_samples():
    samples = _recorded()
    on_run = interference(samples, frozenset({0, 1}))
    # busy 1.20 + 1.10 on PUs 0 and 1, less the tree's highest reading (1.70), plus 0.05 stolen; over 1.25 s.
    assert on_run.outside_cpu_s == pytest.approx(0.65)
    assert on_run.steal_s == pytest.approx(0.05)
    assert on_run.outside_cores == pytest.approx(0.52)
    assert on_run.disturbed(DEFAULT_DISTURBED_ABOVE) and not on_run.disturbed(0.6)
    # Every PU: the compile on PU 2 counts too.
    assert interference(samples, None).outside_cpu_s == pytest.approx(1.65)
    # A PU the samples do not have: every PU, rather than none.
    assert interference(samples, frozenset({0, 7})) == interference(samples, None)
    # PU 2 alone was busier than nothing, but less than the tree's time: clamped at 0, never negative.
    assert interference(samples, frozenset({2})).outside_cpu_s == 0.0
    # The first and last sample alone miss the 0.10 s that left the tree's count: 0.10 s more outside.
    assert interference([samples[0], samples[-1]], frozenset({0, 1})).outside_cpu_s == pytest.approx(0.75)
    assert [Sample.from_json(s.as_json()) for s in samples] == samples


def test_a_tick_of_other_work_does_not_disturb_a_run_of_milliseconds():
    first = Sample(at=10.0, pus=(PuTimes(busy=5.0, steal=0.0),), tree_cpu_s=1.0)
    tick = Sample(at=10.002, pus=(PuTimes(busy=5.0 + TICK_S, steal=0.0),), tree_cpu_s=1.0)
    short = interference([first, tick], frozenset({0}))
    assert short.outside_cores > 1 and not short.disturbed(DEFAULT_DISTURBED_ABOVE)
    # The same other work over a longer run: 10 ticks in 20 ms, half a core, past what resolution explains.
    busy = Sample(at=10.02, pus=(PuTimes(busy=5.0 + 10 * TICK_S, steal=0.0),), tree_cpu_s=1.0)
    assert interference([first, busy], frozenset({0})).disturbed(DEFAULT_DISTURBED_ABOVE)


class _Machine:
    """A measure() for quiet_start: the loads it returns, one per probe, then the last again."""

    def __init__(self, *loads: float) -> None:
        self.loads = list(loads)
        self.lengths: list[float] = []

    def __call__(self, seconds: float) -> Load:
        self.lengths.append(seconds)
        load = self.loads.pop(0) if len(self.loads) > 1 else self.loads[0]
        return Load(outside_cores=load, top=(("cc1plus", load),))


def test_the_quiet_check_says_one_line_when_busy_and_waits_only_when_asked():
    said: list[str] = []
    machine = _Machine(0.1)
    assert quiet_start(0.25, 30.0, False, said.append, machine).outside_cores == 0.1
    assert said == [] and machine.lengths == [PROBE_S]
    machine = _Machine(1.9)
    quiet_start(0.25, 0.0, True, said.append, machine)
    assert said == ["the machine is busy: 1.90 cores used by other processes (cc1plus 1.90); measuring anyway, a run "
                    "beside other work marked disturbed (--wait-quiet S waits for it; --ignore-load skips this check)"]
    assert len(machine.lengths) == 1 and machine.lengths[0] < PROBE_S  # short inside an allocation
    said.clear()
    machine = _Machine(1.9, 1.0, 0.1)
    assert quiet_start(0.25, 60.0, False, said.append, machine).outside_cores == 0.1
    assert len(machine.lengths) == 3
    assert said[0].endswith("waiting up to 60 s for it to calm down") and said[1].startswith("the machine is quiet now")
    said.clear()
    quiet_start(0.25, 0.01, False, said.append, _Machine(1.9))
    assert said[-1].startswith("still busy after 0.01 s: 1.90 cores") and "measuring anyway" in said[-1]


SPIN = """
import os, sys
os.sched_setaffinity(0, {int(sys.argv[2])})
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.replace(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    pass
"""


class Spinner:
    """A process spinning on one PU that is no descendant of this one (started by a process that exits at once), so
    the sampler counts it as other work, as it would a compile started by someone else."""

    def __init__(self, tmp: Path, pu: int) -> None:
        self.pidfile = tmp / f"spinner-{time.monotonic_ns()}.pid"
        self.pu = pu
        self.pid: int | None = None

    def start(self) -> None:
        starter = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], "
                   "sys.argv[3]], start_new_session=True)")
        subprocess.run([sys.executable, "-c", starter, SPIN, str(self.pidfile), str(self.pu)], check=True, timeout=60)
        deadline = time.monotonic() + 60
        while not self.pidfile.exists():
            assert time.monotonic() < deadline, "the spinner did not start"
            time.sleep(0.01)
        self.pid = int(self.pidfile.read_text())
        assert self.pid not in {p.pid for p in psutil.Process().children(recursive=True)}

    def stop(self) -> None:
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while psutil.pid_exists(self.pid) and time.monotonic() < deadline:
            try:
                if psutil.Process(self.pid).status() == psutil.STATUS_ZOMBIE:
                    break  # dead, not yet reaped by its new parent: it uses no CPU
            except psutil.NoSuchProcess:
                break
            time.sleep(0.01)
        self.pid = None


# How long a quiet-machine test waits for the machine to calm down before it gives up.
QUIET_WAIT_S = 60.0


class Background:
    """The other work while a quiet-machine test runs, watched independently of hympi.busy: every TICK_S a thread
    reads every process's CPU time (psutil) and adds what those outside the test used since (not this pytest
    process and its descendants, not the processes started with `tmp` in their command line: the test's spinner).

    `with background:` around the test's body: a failed assertion while other work used more than LIMIT cores over
    some WINDOW_S skips the test (what it asserts about other work was then about someone else's); a pass is a
    pass."""

    TICK_S = 0.25
    WINDOW_S = 1.0
    LIMIT = DEFAULT_DISTURBED_ABOVE / 2

    def __init__(self, tmp: Path) -> None:
        self._tmp = str(tmp)
        self._me = psutil.Process()
        self._seen: dict[int, float] = {}
        self._ticks: list[float] = []  # cores of other work in each tick
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="quiet-machine-watch", daemon=True)

    def _outside_cpu_s(self) -> float:
        """CPU seconds other processes used since the last call (a process new since then: all of its time)."""
        ours = {self._me.pid, *(c.pid for c in self._me.children(recursive=True))}
        used = 0.0
        seen: dict[int, float] = {}
        for process in psutil.process_iter(["cpu_times", "cmdline"]):
            times, cmdline = process.info["cpu_times"], process.info["cmdline"] or []
            if times is None or process.pid in ours or any(self._tmp in arg for arg in cmdline):
                continue
            seen[process.pid] = times.user + times.system
            used += seen[process.pid] - self._seen.get(process.pid, 0.0 if self._seen else seen[process.pid])
        self._seen = seen
        return max(used, 0.0)

    def _loop(self) -> None:
        self._outside_cpu_s()
        last = time.monotonic()
        while not self._stop.wait(self.TICK_S):
            used = self._outside_cpu_s()
            now = time.monotonic()
            self._ticks.append(used / (now - last))
            last = now

    def busiest(self) -> float:
        """The most cores other work used over any WINDOW_S (0 when the test was too short to tell)."""
        span = max(1, round(self.WINDOW_S / self.TICK_S))
        windows = [sum(self._ticks[i:i + span]) / span for i in range(max(0, len(self._ticks) - span) + 1)]
        return max(windows, default=0.0)

    def __enter__(self) -> Background:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        self._stop.set()
        self._thread.join()
        if exc_type is not None and issubclass(exc_type, AssertionError) and self.busiest() > self.LIMIT:
            skips.skip(skips.Reason.BUSY, f"other work used up to {self.busiest():.2f} cores during the test, so "
                                          f"its failure says nothing about hympi: {exc}")


@pytest.fixture
def quiet_machine(tmp_path: Path) -> Background:
    """Waits up to QUIET_WAIT_S for the machine to be quiet (skips when it stays busy: what the test asserts about
    other work would be about someone else's), then gives the test the watch its body runs in."""
    deadline = time.monotonic() + QUIET_WAIT_S
    load = probe(PROBE_S)
    while load.outside_cores > DEFAULT_DISTURBED_ABOVE / 2 and time.monotonic() < deadline:
        load = probe(PROBE_S)  # what the parallel pass left behind is still ending
    if load.outside_cores > DEFAULT_DISTURBED_ABOVE / 2:
        skips.skip(skips.Reason.BUSY, f"needs a quiet machine for {QUIET_WAIT_S:g} s: {load.line()}")
    return Background(tmp_path)


def test_a_quiet_machine_test_failing_beside_other_work_is_skipped_as_busy(tmp_path: Path):
    """The watch counts a process that is no descendant of the test (a detached spinner, as a colleague's compile
    would be) and turns the failure into a skip naming the load; more load only makes that surer."""
    other = tmp_path.parent / "other-work"  # outside tmp_path: not the test's own spinner
    other.mkdir(exist_ok=True)
    spinner = Spinner(other, _pu_of_every_layout())
    spinner.start()
    try:
        with pytest.raises(pytest.skip.Exception, match=r"^the machine is busy: other work used up to"), \
                Background(tmp_path):
            time.sleep(4 * Background.WINDOW_S)
            raise AssertionError("a wrong answer")
    finally:
        spinner.stop()


class _SpinningRunner(InProcessLauncher):
    """Each launch takes RUN_S of wall time and almost no CPU; launches number `first`..`last` (from 1) run while
    the spinner spins on a PU every layout occupies, and report the rate a disturbed run would: 2x1 slowed to a
    third, so that counting them would make 1x1 look best."""

    RUN_S = 0.3

    def __init__(self, spinner: Spinner | None, first: int, last: int) -> None:
        super().__init__()
        self.spinner, self.first, self.last = spinner, first, last

    def __call__(self, cmd: list[str], timeout: float) -> RunOutcome:
        number = self.launched + 1
        spinning = self.spinner is not None and self.first <= number <= self.last
        if spinning and number == self.first:
            self.spinner.start()
        time.sleep(self.RUN_S)
        outcome = super().__call__(cmd, timeout)
        if spinning and number == self.last:
            self.spinner.stop()
        return outcome

    def record(self, cmd: list[str]) -> dict:
        ranks = launch_ranks(cmd)
        layout = f"{ranks}x{launch_env(cmd)['OMP_NUM_THREADS']}"
        spinning = self.spinner is not None and self.first <= self.launched <= self.last
        rate = {"1x1": 1.0, "2x1": 2.0}[layout] * (1 + 0.01 * self.launched)
        if spinning and layout == "2x1":
            rate /= 3
        return {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p"}


def _sweep(tmp: Path, runner: _SpinningRunner) -> tuple[list[Run], AppGroup]:
    """Six rounds of 1x1 and 2x1 without warm-up (12 launches): the runs in launch order, and their group."""
    params = SweepParams("rb3d", ((1, 1), (2, 1)), repeat=6, warmup=False, min_time=0.0, seed=3)
    the_plan = plan(params, cpu_limit=2)
    with Store.open(tmp / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep, _ = open_sweep(store, machine, params, len(the_plan.items), False)
        run_sweep(store, sweep, params, the_plan.items, Console(file=io.StringIO()), runner)
        runs = store.runs([sweep.id])
    (group,) = group_runs(runs, {sweep.id: machine.id})
    return runs, group


@pytest.fixture
def bin_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in fake_bin_dir(tmp_path).items():  # hympi-info for the layouts' PUs
        monkeypatch.setenv(key, value)


def _pu_of_every_layout() -> int:
    """A PU that 1x1 and 2x1 (bind core, compact) both occupy: the first core's."""
    return min(load_node_tree("this").cores[0].pus)


@pytest.mark.quiet_machine
@pytest.mark.parametrize(("first", "last", "withheld"), [(5, 8, False), (3, 12, True)])
def test_exactly_the_runs_a_spinner_overlaps_are_disturbed(tmp_path, bin_env, quiet_machine, first, last, withheld):
    runner = _SpinningRunner(Spinner(tmp_path, _pu_of_every_layout()), first, last)
    with quiet_machine:
        _check_spinner_sweep(tmp_path, runner, first, last, withheld)


def _check_spinner_sweep(tmp_path: Path, runner: _SpinningRunner, first: int, last: int, withheld: bool) -> None:
    runs, group = _sweep(tmp_path, runner)
    assert len(runs) == 12 and all(r.interference is not None for r in runs)
    flagged = [i + 1 for i, r in enumerate(runs) if r.disturbed]
    loads = [round(r.interference.outside_cores, 2) for r in runs]
    assert flagged == list(range(first, last + 1)), loads
    assert all(r.interference.outside_cores > 0.5 for r in runs if r.disturbed), loads
    text = recommend(group)
    if withheld:  # 1 clean run of each layout is left: no verdict, and the reason
        assert verdict(group).recommended is None
        assert text.startswith("5 of 6 runs of 1x1 overlapped other work using") and "no verdict" in text, text
    else:  # 4 clean runs each: 2x1 wins, as it does on a quiet machine (the disturbed 2x1 runs say 1x1)
        chosen = verdict(group).recommended
        assert chosen is not None and chosen.label == "2x1" and chosen.disturbed == 2, text
        clean = sorted(r.value("rate") for r in runs if r.ranks == 2 and not r.disturbed)
        assert sorted(chosen.rates) == clean and len(clean) == 4
    assert quiet_sentence(runs).startswith(f"The machine was busy: {last - first + 1} of 12 measured runs")


@pytest.mark.quiet_machine
def test_without_the_spinner_no_run_is_disturbed(tmp_path, bin_env, quiet_machine):
    with quiet_machine:
        runs, group = _sweep(tmp_path, _SpinningRunner(None, 0, 0))
        assert [r.disturbed for r in runs] == [False] * 12, [r.interference for r in runs]
        assert verdict(group).recommended.label == "2x1"
        assert quiet_sentence(runs).startswith("The machine was quiet: none of 12 measured runs overlapped other "
                                               "work")


@pytest.mark.quiet_machine
def test_the_probe_sees_a_spinner_and_names_it(tmp_path, quiet_machine):
    with quiet_machine:
        assert probe(PROBE_S).outside_cores <= DEFAULT_DISTURBED_ABOVE  # quiet: the check would say nothing
        spinner = Spinner(tmp_path, _pu_of_every_layout())
        spinner.start()
        try:
            name = psutil.Process(spinner.pid).name()
            load = probe(PROBE_S)
        finally:
            spinner.stop()
        assert load.outside_cores > 0.6 and load.top[0][0] == name, load


def _stored(sweep_id: int, ranks: int, repeat: int, rate: float, outside: float | None) -> Run:
    """A run of layout ranks x 1 with the other work `outside` cores beside it (None: not measured)."""
    busy = None if outside is None else Interference(outside_cpu_s=outside * 2.0, steal_s=0.0, outside_cores=outside)
    return Run(sweep_id, "rb3d", ranks, 1, "core", "compact", repeat, (), (), ("mpirun",), "ok", 0, 2.0,
               {"rate": rate, "rate_unit": "x", "verified": True, "problem": "p"}, interference=busy,
               disturbed=busy is not None and busy.disturbed(DEFAULT_DISTURBED_ABOVE))


def test_disturbed_runs_are_stored_exported_marked_and_counted_in_no_verdict(tmp_path: Path):
    with Store.open(tmp_path / "r.db") as store:
        machine = store.ensure_machine("h", "t", "m", "c", {})
        sweep = store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 12)
        # 2x1 is twice as fast, except in its two runs beside a compile (0.9 cores of other work).
        for repeat in range(1, 7):
            store.add_run(_stored(sweep.id, 1, repeat, 1.0 + 0.01 * repeat, 0.02))
            store.add_run(_stored(sweep.id, 2, repeat, 0.5 if repeat in (2, 5) else 2.0 + 0.01 * repeat,
                                  0.9 if repeat in (2, 5) else 0.01))
        store.add_run(_stored(sweep.id, 1, 7, 1.0, None))  # recorded before hympi measured other work
        runs = store.runs([sweep.id])
        exported = {(r["ranks"], r["repeat"]): r for r in rows(store, [sweep.id])}
    assert [(r.ranks, r.repeat) for r in runs if r.disturbed] == [(2, 2), (2, 5)]
    assert runs[3].interference == Interference(outside_cpu_s=1.8, steal_s=0.0, outside_cores=0.9)
    assert runs[-1].interference is None and not runs[-1].disturbed
    assert (exported[(2, 2)]["outside_cores"], exported[(2, 2)]["disturbed"]) == (0.9, True)
    assert (exported[(1, 7)]["outside_cores"], exported[(1, 7)]["disturbed"]) == (None, None)
    text = io.StringIO()
    assert write_csv(exported.values(), text) == len(exported)
    assert "outside_cores" in text.getvalue().splitlines()[0]
    (group,) = group_runs(runs, {sweep.id: machine.id})
    two = next(s for s in group.layouts if s.ranks == 2)
    assert (two.runs, two.ok, two.disturbed, two.disturbed_load) == (6, 6, 2, 0.9)
    assert sorted(two.rates) == [2.01, 2.03, 2.04, 2.06] and two.disturbed_rates == (0.5, 0.5)
    assert verdict(group).recommended is two and recommend(group).startswith("Best: 2 ranks x 1 thread")
    page = render("t", "now", [], [group], {group.slug: GroupFigures("r.png", "m.png")}, runs, ())
    assert "2 (0.90 cores)" in page and page.count("disturbed (0.90 cores)") == 2
    assert ("The machine was busy: 2 of 12 measured runs (17 %) overlapped other work above the threshold and are "
            "left out of the verdicts (median 0.02 cores of other work beside a run).") in page


def test_too_few_clean_runs_withhold_the_verdict_and_auto_measures_that_layout_again():
    runs = [_stored(1, 1, repeat, 1.0, 0.0) for repeat in (1, 2, 3)]
    runs += [_stored(1, 2, repeat, 0.5 if repeat > 1 else 2.0, 0.9 if repeat > 1 else 0.0) for repeat in (1, 2, 3)]
    (group,) = group_runs(runs, {1: 1})
    assert recommend(group) == ("2 of 3 runs of 2x1 overlapped other work using 0.9 cores; no verdict (measure again "
                                "on a quiet machine, or with --repeat auto).")
    every = [_stored(1, ranks, repeat, 1.0, 0.9) for ranks in (1, 2) for repeat in (1, 2, 3)]
    (group,) = group_runs(every, {1: 1})  # no clean run at all: the reason, not "no verified result"
    assert recommend(group).startswith("3 of 3 runs of 1x1 overlapped other work using 0.9 cores; 3 of 3 runs of 2x1")
    params = SweepParams("rb3d", ((1, 1), (2, 1)), repeat=3, auto=True, max_repeat=6)
    layouts = ((1, 1, "core", "none", ()), (2, 1, "core", "none", ()))
    assert [len(s.rates) for s in measured_samples(runs, layouts, 4)] == [3, 1]
    # Every 2x1 run disturbed: no clean rate at all, yet --repeat auto measures it again (a layout without any ok
    # run is not); 1x1, alone with rates, has nothing to be separated from.
    hit = [*runs[:3], *(_stored(1, 2, repeat, 0.5, 0.9) for repeat in (1, 2, 3))]
    assert still_open(params, layouts, hit, 4) == (layouts[1],)
    hit += [_stored(1, 2, 4, 2.0, 0.0), _stored(1, 2, 5, 2.0, 0.0)]
    assert still_open(params, layouts, hit, 6) == still_open(params, layouts, [r for r in hit if not r.disturbed], 6)


def test_ok_runs_left_out_for_other_work_are_named_not_called_unverified():
    """NWChem swept once per layout (the default --repeat 1) beside another user's work: every run ok and disturbed,
    and the verdict said 'No layout of nwchem produced a verified result'; ABINIT with --repeat 4, 2 of 2x1's runs
    disturbed: 'measure each layout 4 or more times: --repeat 4'. Both now name the runs left out."""
    every = [_stored(1, ranks, 1, 1.0, 0.9) for ranks in (1, 2)]
    (group,) = group_runs(every, {1: 1})
    assert recommend(group) == ("1 of 1 runs of 1x1 overlapped other work using 0.9 cores; 1 of 1 runs of 2x1 "
                                "overlapped other work using 0.9 cores; no verdict (measure again on a quiet machine, "
                                "or with --repeat auto).")
    (group,) = group_runs([_stored(1, 1, 1, 1.0, 0.0), _stored(1, 2, 1, 2.0, 0.9)], {1: 1})
    assert recommend(group).endswith("nothing to compare it with. Left out: 1 of 1 runs of 2x1 overlapped other work "
                                     "using 0.9 cores.")
    failed = [dataclasses.replace(r, status="failed", record=None) for r in every]  # failed beside other work
    (group,) = group_runs(failed, {1: 1})
    assert recommend(group).startswith("No layout of rb3d produced a verified result")
    runs = [_stored(1, 1, repeat, 1.0 + 0.01 * repeat, 0.0) for repeat in (1, 2, 3, 4)]
    runs += [_stored(1, 2, repeat, 1.5 + 0.01 * repeat, 0.9 if repeat in (1, 2) else 0.0) for repeat in (1, 2, 3, 4)]
    (group,) = group_runs(runs, {1: 1})
    text = recommend(group)
    assert text.startswith("2x1 looks 1.5"), text
    assert text.endswith(" on 2 runs: too few to say so (a verdict needs 4 runs a side; 2 of 4 runs of 2x1 overlapped "
                         "other work using 0.9 cores); no verdict (measure again on a quiet machine, or with --repeat "
                         "auto)."), text


# Files that build the records with the documented threshold on purpose: this one (it measures disturbance) and
# test_params.py (it checks the records' own defaults and flags).
OWN_THRESHOLD = {"conftest.py", "test_busy.py", "test_params.py"}


def test_every_other_test_builds_its_sweeps_with_the_tests_threshold():
    """A sweep or tune a test builds in code takes contract.toml's threshold unless conftest's helpers build it, and
    then its runs are judged disturbed by the tests running beside it: a result that changes with the load."""
    here = Path(__file__).parent
    direct = [f"{path.name}:{number}" for path in sorted(here.glob("*.py")) if path.name not in OWN_THRESHOLD
              for number, line in enumerate(path.read_text().splitlines(), 1)
              if re.search(r"(?<![.\w])(SweepParams|TuneParams)\(", line)]
    assert direct == [], f"build these with conftest.sweep_params / tune_params: {direct}"
