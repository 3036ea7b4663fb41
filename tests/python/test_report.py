"""The report: recommendation arithmetic, and the real page opened in headless Chromium (plots shown, no errors)."""

from __future__ import annotations

import base64
import errno
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest
import websocket

import tunedata
from conftest import hympi
from fakeapps import REPO, fake_bin_dir
from hympi.cli.common import ensure_out_dir
from hympi.errors import HympiFatal
from hympi.launch.layout import layout_words
from hympi.report import html, plots, writer
from hympi.report.analysis import group_runs, group_titles, recommend, verdict
from hympi.report.html import GroupFigures, render
from hympi.report.writer import write_report
from hympi.store import Run, Store
from hympi.tune.features import BUSY_PROFILE_NAME

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--remote-debugging-port=0", "--remote-allow-origins=*", "--window-size=1280,2000"]


def _run(ranks: int, threads: int, repeat: int, rate: float | None, status: str = "ok") -> Run:
    record = None if rate is None else {"rate": rate, "rate_unit": "GFLOP/s", "problem": "64^3", "verified": True,
                                        "comm_s": 0.1, "comp_s": 1.0, "max_rss_mib": 20.0, "node_rss_mib": 40.0}
    return Run(1, "rb3d", ranks, threads, "core", "compact", repeat, ("--size", "64"), (), ("mpirun",), status,
               0 if status == "ok" else 1, 1.0, record)


def test_recommendation_uses_median_rates_and_confidence_intervals():
    runs = [_run(2, 1, 0, 50.0)]  # the warm-up: recorded, never counted
    runs += [_run(2, 1, rep, rate) for rep, rate in enumerate((13.1, 13.0, 99.0, 13.2, 13.05), 1)]  # one outlier
    runs += [_run(1, 2, rep, rate) for rep, rate in enumerate((12.0, 12.1, 11.9, 12.05, 11.95), 1)]
    runs += [_run(1, 1, rep, rate) for rep, rate in enumerate((10.0, 9.0, 11.0, 10.5, 9.5), 1)]
    runs += [_run(1, 2, 6, None, status="timeout")]
    (group,) = group_runs(runs, {1: 1})
    text = recommend(group)
    assert text.startswith("Best: 2 ranks x 1 thread, bind core (13.1 GFLOP/s median of 5). 2x1 is fastest "
                           "(1.09x 1x2, 95 % CI ")  # 13.1 / 12.0
    assert "1x2 is also the best hybrid layout on as many cores" in text
    assert "Against the worst layout: 2x1 is 1.31x 1x1 (95 % CI " in text  # 13.1 / 10.0
    assert text.endswith("Not ok: 1x2: 1 timeout.")
    assert [s.warmups for s in group.layouts if s.label == "2x1"] == [1]


def test_a_layout_that_is_both_the_worst_and_the_best_hybrid_one_is_named_so_in_one_clause():
    """1x2 is the worst layout and the only hybrid one on 2x1's cores: one comparison, said as one phrase (it read
    'Against the worst layout; the best hybrid layout on as many cores: ...')."""
    runs = [_run(2, 1, rep, r) for rep, r in enumerate((13.1, 13.0, 13.2, 13.05), 1)]
    runs += [_run(1, 1, rep, r) for rep, r in enumerate((12.0, 12.1, 11.9, 12.05), 1)]
    runs += [_run(1, 2, rep, r) for rep, r in enumerate((10.0, 9.9, 10.1, 10.05), 1)]
    text = recommend(group_runs(runs, {1: 1})[0])
    assert ("Against the worst layout, which is also the best hybrid layout on as many cores: 2x1 is 1.30x 1x2 "
            "(95 % CI ") in text, text
    assert text.count("1x2") == 1 and ";" not in text


def test_a_lead_on_a_drifting_machine_is_found_round_by_round():
    """The machine halves its pace from round 5 on and wobbles within each half; 2x1 leads 1x2 by 6-8 % in every
    round. The two samples hold the drift as spread and cannot order them; 8 rounds of one sweep are compared round
    by round, and say so. Runs of the same round numbers in two sweeps never pair."""
    pace = (1.0, 0.9, 1.05, 0.95, 0.5, 0.45, 0.55, 0.48)
    lead = (1.07, 1.06, 1.08, 1.07, 1.06, 1.07, 1.08, 1.07)
    runs = [_run(2, 1, rep, 13.0 * p * f) for rep, (p, f) in enumerate(zip(pace, lead, strict=True), 1)]
    runs += [_run(1, 2, rep, 13.0 * p) for rep, p in enumerate(pace, 1)]
    text = recommend(group_runs(runs, {1: 1})[0])
    assert text.startswith("Best: 2 ranks x 1 thread, bind core") and ", round by round)" in text, text
    assert "2x1 is fastest (1.07x 1x2, 95 % CI 1.06-1.08, round by round)" in text, text
    apart = [replace(r, sweep_id=2) if r.ranks == 1 else r for r in runs]
    text = recommend(group_runs(apart, {1: 1, 2: 1})[0])
    assert text.startswith("No layout is separated from the rest at the top") and "round by round" not in text, text


def _bound(run: Run, *pus: str) -> Run:
    """`run` with the binding rows of its ranks' one thread each, rank i bound to the PU list pus[i]."""
    assert run.record is not None
    rows = [{"host": "vm", "rank": i, "thread": 0, "bound": bound, "pu": 0} for i, bound in enumerate(pus)]
    return replace(run, record={**run.record, "binding": rows})


@pytest.mark.parametrize("bind", ["core", "none"])
def test_an_oversubscribed_layout_is_not_said_to_compute_on_more_cores_than_it_was_bound_to(bind: str):
    # 3 ranks on a 2-core machine (--oversubscribe; ESyS-Particle's manager and 2 workers): ranks 0 and 2 share
    # PU 0 under core binding, all three share both PUs without it. 3x1 is the slower of two layouts on the same 2
    # cores, not "the best median on all 3 cores" with "more cores do not pay off".
    sets = {"core": ("0", "1", "0"), "none": ("0-1",) * 3}[bind]
    runs = [_bound(_run(2, 1, rep, 10.0 + 0.1 * rep), *sets[:2]) for rep in range(1, 5)]
    runs += [_bound(_run(3, 1, rep, 6.0 + 0.1 * rep), *sets) for rep in range(1, 5)]
    runs += [_bound(_run(1, 1, rep, 5.0 + 0.1 * rep), sets[0]) for rep in range(1, 5)]
    (group,) = group_runs(runs, {1: 1})
    assert {s.label: (s.cores, s.cores_used) for s in group.layouts} == {"1x1": (1, 1), "2x1": (2, 2), "3x1": (3, 2)}
    text = recommend(group)
    assert text.startswith("Best: 2 ranks x 1 thread") and "cores" not in text, text
    rows = dict(re.findall(r"<tr><td>(\dx\d)</td><td>\w+</td><td>\w+</td><td>([^<]*)</td>", html._layout_table(group)))
    assert rows == {"1x1": "1", "2x1": "2", "3x1": "2 (3 asked)"}, rows
    # Without binding rows (an older record) a layout is taken to use its ranks x threads.
    plain = group_runs([replace(r, record={k: v for k, v in r.record.items() if k != "binding"}) for r in runs],
                       {1: 1})[0]
    assert "the best median on all 3 cores" in recommend(plain)
    # Two layouts the runs cannot tell apart on the same 2 cores: neither is chosen "for its fewer cores".
    tied = [_bound(_run(2, 1, rep, 10.0 + 0.1 * rep), *sets[:2]) for rep in range(1, 5)]
    tied += [_bound(_run(3, 1, rep, 10.05 + 0.1 * rep), *sets) for rep in range(1, 5)]
    text = recommend(group_runs(tied, {1: 1})[0])
    assert "fewer cores" not in text and "indistinguishable" in text, text


def test_an_oversubscribed_layout_is_set_against_the_other_kind_on_the_cores_it_was_bound_to():
    """ESyS-Particle's 3x1 on 2 cores (ranks 0 and 2 on PU 0) is a pure MPI layout on 2 cores: its hybrid counterpart
    is 1x2, not a 1x3 that was never run; its memory per core is the node's over those 2; its line in the rate plot
    asks 3 cores and says it ran on 2."""
    runs = [_bound(_run(3, 1, rep, 12.0 + 0.1 * rep), "0", "1", "0") for rep in range(1, 5)]
    runs += [_bound(_run(2, 1, rep, 10.0 + 0.1 * rep), "0", "1") for rep in range(1, 5)]
    runs += [_bound(_run(1, 2, rep, 8.0 + 0.1 * rep), "0-1") for rep in range(1, 5)]
    (group,) = group_runs(runs, {1: 1})
    text = recommend(group)
    assert text.startswith("Best: 3 ranks x 1 thread"), text
    assert "Against the worst layout, which is also the best hybrid layout on as many cores: 3x1 is 1.48x 1x2" in text
    per_core = {s.label: s.rss_per_core_mib for s in group.layouts}
    assert per_core == {"3x1": 20.0, "2x1": 20.0, "1x2": 20.0}, per_core  # node_rss_mib 40 over 2 cores each
    three = [s for s in group.layouts if s.cores == 3]
    assert plots.line_label(3, three) == "3 cores asked (3x1 on 2)"
    assert plots.line_label(2, [s for s in group.layouts if s.cores == 2]) == "2 cores"


def test_recommendation_when_fewer_cores_win_and_when_nothing_separates():
    runs = [_run(1, 1, rep, 10.0 + 0.1 * rep) for rep in range(1, 5)]
    runs += [_run(2, 1, rep, 6.0 + 0.1 * rep) for rep in range(1, 5)]
    runs += [_run(1, 2, rep, 5.0 + 0.1 * rep) for rep in range(1, 5)]
    text = recommend(group_runs(runs, {1: 1})[0])
    assert text.startswith("Best: 1 rank x 1 thread")
    assert "2x1 is also the best median on all 2 cores: more cores do not pay off for this problem" in text
    assert "On all 2 cores, against the best hybrid layout: 2x1 is 1.19x 1x2 (95 % CI " in text  # 6.25 / 5.25
    runs = [_run(1, 2, rep, rate) for rep, rate in enumerate((8.0, 6.0, 7.0, 6.5), 1)]
    runs += [_run(2, 1, rep, rate) for rep, rate in enumerate((7.0, 6.5, 6.8, 7.1), 1)]
    text = recommend(group_runs(runs, {1: 1})[0])
    assert text.startswith("No layout is separated from the rest at the top; recommended: 2 ranks x 1 thread")
    assert "2x1 and 1x2 are indistinguishable here (CI " in text and "choose 2x1 for its fewer threads per rank" in text
    assert "fastest" not in text and "Best" not in text  # no ranking inside the noise
    lean = [replace(r, record={**r.record, "node_rss_mib": 20.0}) if r.ranks == 1 else r for r in runs]
    text = recommend(group_runs(lean, {1: 1})[0])  # now 1x2, the lower median, is chosen for its memory ...
    assert "recommended: 1 rank x 2 threads" in text and "1x2 and 2x1 are indistinguishable here" in text
    assert "choose 1x2 for its lower memory per node" in text  # ... and its pair with the top median is stated
    text = recommend(group_runs([_run(1, 1, 1, 10.0), _run(2, 1, 1, 6.0)], {1: 1})[0])
    assert text.startswith("No layout has the 2 ok runs a comparison needs")
    assert "nothing to recommend" in recommend(group_runs([_run(1, 1, 1, None, "failed")], {1: 1})[0])


def test_a_lower_is_better_figure_of_merit_is_shown_as_the_figure_not_its_inverse():
    """A program's time (lower is better) is recorded as its inverse so that every rate grows with quality; people
    read the time itself: the recommendation's median is the median of the times (0.275 s over 0.2, 0.25, 0.3 and
    0.5; 1 / the median rate would be 0.2727), the table's min and max the fastest and the slowest run, each run's
    row its time."""
    seconds = {(1, 1): (0.5, 0.25, 0.3, 0.2), (2, 1): (0.9, 0.8, 1.0, 0.85)}
    runs = [replace(run, app="pw.x", record={**(run.record or {}), "rate_unit": "1/(s)"})
            for (r, t), values in seconds.items() for rep, value in enumerate(values, 1)
            for run in [_run(r, t, rep, 1.0 / value)]]
    (group,) = group_runs(runs, {1: 1})
    assert recommend(group).startswith("Best: 1 rank x 1 thread, bind core (0.275 s median of 4). 1x1 is fastest")
    page = render("t", "now", [], [group], {group.slug: GroupFigures("r.png", "m.png")}, runs, ())
    assert "<th>figure min</th><th>figure median</th><th>figure max</th>" in page, page
    assert "<td>0.2</td><td><b>0.275</b></td><td>0.5</td>" in page and "figure of merit in s, lower is better" in page
    assert page.count("<td>0.85</td><td>s</td>") == 1  # the run of 0.85 s, not 1.176 1/(s)


def test_a_page_of_many_runs_lists_those_that_did_not_end_ok_and_says_where_the_rest_is(monkeypatch):
    """Beyond html.RUNS_LISTED runs the page lists the failed and the disturbed ones (the newest of them when they
    too are more), never every ok run: 100,000 rows made a 34 MB page."""
    monkeypatch.setattr(html, "RUNS_LISTED", 5)

    def runs(failed_ids: set[int]) -> list[Run]:
        return [replace(_run(1, 1, i, 1.0, "failed" if i in failed_ids else "ok"), id=i, disturbed=i == 3)
                for i in range(1, 10)]

    def listed(page: str) -> list[int]:
        rows = page.split("<table class='runs'>")[1].split("</table>")[0].split("<tr><td>")[1:]
        return [int(row.split("<")[0]) for row in rows]
    few = render("t", "now", [], [], {}, runs({2, 7}), ())
    assert listed(few) == [2, 3, 7]
    assert ("9 runs recorded, more than the 5 this page lists: it lists the 3 that did not end ok or were "
            "disturbed") in few
    many = render("t", "now", [], [], {}, runs({1, 2, 4, 5, 6, 8}), ())
    assert listed(many) == [3, 4, 5, 6, 8]
    assert "it lists the newest 5 of the 7 that did not end ok" in many
    assert listed(render("t", "now", [], [], {}, runs({2})[:5], ())) == [1, 2, 3, 4, 5]  # all, at the limit


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.fail("chromium is not installed: run scripts/bootstrap-system.sh (Debian package 'chromium')")


class Page:
    """A headless Chromium tab driven over the DevTools protocol, collecting console errors."""

    def __init__(self, ws: websocket.WebSocket) -> None:
        self.ws = ws
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params: object) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                assert "error" not in msg, msg
                return msg.get("result", {})
            self.events.append(msg)

    def wait_event(self, method: str, seconds: float = 30.0) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(e.get("method") == method for e in self.events):
                return
            self.ws.settimeout(max(0.1, deadline - time.monotonic()))
            self.events.append(json.loads(self.ws.recv()))
        raise AssertionError(f"no {method} within {seconds} s")

    def open(self, url: str) -> None:
        self.events.clear()
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        self.call("Runtime.evaluate", expression="new Promise(r => setTimeout(r, 300))", awaitPromise=True)

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and failed loads reported since the last open()."""
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif e.get("method") == "Runtime.exceptionThrown":
                out.append(p["exceptionDetails"].get("text", "exception"))
            elif e.get("method") == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(p["entry"]["text"])
        return out

    def evaluate(self, expression: str) -> object:
        return self.call("Runtime.evaluate", expression=expression, returnByValue=True)["result"]["value"]


@pytest.fixture(scope="module")
def page() -> Iterator[Page]:
    profile = Path(tempfile.mkdtemp(prefix="hympi-chromium-"))
    proc = subprocess.Popen([_chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.exists() and port_file.read_text().strip()) and time.monotonic() < deadline:
            assert proc.poll() is None, "chromium exited at start-up"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as resp:
            targets = json.load(resp)
        url = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
        ws = websocket.create_connection(url, timeout=30, suppress_origin=True)
        tab = Page(ws)
        for domain in ("Page", "Runtime", "Log"):
            tab.call(f"{domain}.enable")
        yield tab
        ws.close()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


def _image_stats(png: bytes | Path) -> tuple[int, int, float]:
    """Width, height and pixel standard deviation (0 for a blank image)."""
    if isinstance(png, Path):
        img = mpimg.imread(png)
    else:
        tmp = Path(tempfile.mkstemp(suffix=".png")[1])
        tmp.write_bytes(png)
        img = mpimg.imread(tmp)
        tmp.unlink()
    return img.shape[1], img.shape[0], float(np.std(img[..., :3]))


def test_the_checker_sees_broken_images_and_console_errors(page: Page, tmp_path: Path):
    """Negative control: a page with a missing image and a console error must be caught."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><img src='missing.png'>"
                   "<script>console.error('deliberate error')</script></body></html>")
    page.open(bad.as_uri())
    assert any("deliberate error" in e for e in page.errors())
    assert page.evaluate("Array.from(document.images).map(i => i.naturalWidth)") == [0]


def test_report_of_a_real_sweep_renders_with_plots_and_no_console_errors(page: Page, tmp_path: Path):
    db = tmp_path / "r.db"
    out = tmp_path / "report"
    proc = hympi("sweep", "rb3d", "--ranks", "1,2", "--threads", "1,2", "--repeat", "2", "--db", str(db),
                 "--", "--size", "16", "--iterations", "4", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = hympi("report", "--db", str(db), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    index = out / "index.html"
    lines = proc.stdout.strip().splitlines()
    assert lines[0].startswith("rb3d 16^3: ") and lines[1:] == [f"report: {index.resolve()}"], lines
    pngs = sorted(out.glob("*.png"))
    names = {p.name.rsplit("-", 1)[-1] if not p.name.endswith("comm-comp.png") else "comm-comp.png" for p in pngs}
    assert names in ({"rate.png", "memory.png", "comm-comp.png"}, {"rate.png", "memory.png"})
    with Store.open(db, create=False) as store:
        runs = store.runs()
        by_layout: dict[tuple[int, int], list[Run]] = {}
        for r in runs:
            if r.repeat != 0:
                by_layout.setdefault((r.ranks, r.threads), []).append(r)
    # The phase chart is drawn when some layout's median phases fit in its median timed region (apps built before
    # the timed region covered the phases record comp_s > time_s: then no chart, and the page says why).
    med = {k: [statistics.median(r.value(f) or 0.0 for r in rs) for f in ("comp_s", "comm_s", "time_s")]
           for k, rs in by_layout.items()}
    fits = any(max(comp, comm) <= 1.02 * time for comp, comm, time in med.values())
    assert ("comm-comp.png" in names) == fits
    for png in pngs:  # real pictures, not empty files or blank canvases
        width, height, spread = _image_stats(png)
        assert width > 300 and height > 200 and spread > 0.05, png

    page.open(index.as_uri())
    assert page.errors() == []
    images = page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.complete, "
                           "i.naturalWidth, i.naturalHeight])")
    assert sorted(src for src, *_ in images) == sorted(p.name for p in pngs)
    assert all(done and w > 300 and h > 200 for _, done, w, h in images), images
    text = page.evaluate("document.body.innerText")
    assert "Machine" in text and "MPI library" in text and "Open MPI" in text
    assert "Recommendation." in text  # 2 repeats: never a verdict, whichever way the runs fell
    # Which sentence depends on how the runs fell: a lead on too few runs withholds the verdict, else the tie-break
    # chooses among layouts it cannot separate. The page must say the one its runs call for.
    (group,) = group_runs(runs, {r.sweep_id: 1 for r in runs})
    withheld = verdict(group).withheld != ""
    assert ("on 2 runs: too few to say so" in text) == withheld, text
    assert ("cannot be separated with 2 runs a side (CI " in text) == (not withheld), text
    assert "Why." in text and " against " in text
    assert [r[0] for r in _cells(page, "table.breakdown")] == ["1x1", "2x1", "1x2"]
    assert "error of the time" in text or "too few to fit" in text
    if not fits:
        assert "computation or communication exceeds the timed region" in text
    rows = page.evaluate("document.querySelectorAll('#runs ~ table tr').length")
    assert rows == 1 + 9  # header + 3 layouts x (warm-up + 2 repeats)
    shot = base64.b64decode(page.call("Page.captureScreenshot", format="png")["data"])
    width, height, spread = _image_stats(shot)
    assert width >= 1000 and spread > 0.05


def _cells(page: Page, table: str) -> list[list[str]]:
    """The text of every data row of the tables matching CSS selector `table`."""
    return page.evaluate(f"Array.from(document.querySelectorAll('{table} tr')).filter(r => r.querySelector('td'))"
                         ".map(r => Array.from(r.cells).map(c => c.innerText.trim()))")


def test_report_shows_the_communication_hierarchy_of_a_real_pingpong_run(page: Page, tmp_path: Path):
    """A real 4-rank ping-pong on 2 virtual nodes: its levels, fit and multi-pair table appear as recorded."""
    db = tmp_path / "p.db"
    out = tmp_path / "report"
    proc = hympi("sweep", "pingpong", "--ranks", "4", "--oversubscribe", "--virtual-nodes", "2", "--db", str(db),
                 "--", "--iterations", "20", "--max-bytes", "16384", "--multi-bytes", "4096", timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        (run,) = store.runs()
    metrics = run.record["metrics"]
    levels = metrics["levels"]
    assert "network" in levels and len(levels) >= 2  # inside a virtual node and across the two
    proc = hympi("report", "--db", str(db), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    png = out / f"pingpong-m1-r{run.id}-bandwidth.png"
    assert sorted(p.name for p in out.glob("*.png")) == [png.name]  # no rate/memory plots for a probe
    width, height, spread = _image_stats(png)
    assert width > 300 and height > 200 and spread > 0.05

    page.open((out / "index.html").as_uri())
    assert page.errors() == []
    assert page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth > 300])") \
        == [[png.name, True]]
    assert page.evaluate("document.querySelector('#hierarchy').innerText") == "Communication hierarchy"
    rows = _cells(page, "table.levels")
    order = ["pu", "core", "l2", "l3", "numa", "package", "node", "network"]
    assert [r[0] for r in rows] == sorted(levels, key=order.index)  # nearest level first, every level once
    for level, pair, pairs_at, zero, alpha, beta, peak in rows:
        data = levels[level]
        assert pair == f"{data['pair'][0]},{data['pair'][1]}" and int(pairs_at) == data["pairs_at_level"]
        assert data["bytes"][0] == 0 and float(zero) == pytest.approx(data["latency_us"][0], rel=1e-2)
        assert float(alpha) == pytest.approx(data["alpha_us"], rel=1e-2)
        # On a loaded machine 20 iterations can fit no positive bandwidth (the slope of time over size is noise):
        # the table then shows none rather than a negative one.
        assert (float(beta) == pytest.approx(data["beta_mbs"], rel=1e-3)) if data["beta_mbs"] > 0 else beta == "-"
        assert float(peak) == pytest.approx(max(data["bandwidth_mbs"]), rel=1e-3)
    multi = _cells(page, "table.multi-pair")
    want = sorted(((m["level"], m["pairs"], m["aggregate_mbs"]) for m in metrics["multi"]),
                  key=lambda m: (order.index(m[0]), m[1]))
    assert [(r[0], int(r[1])) for r in multi] == [(level, pairs) for level, pairs, _ in want]  # nearest first
    assert [float(r[5]) for r in multi] == pytest.approx([agg for _, _, agg in want], rel=1e-3)
    assert ("network", 2) in [(r[0], int(r[1])) for r in multi]  # 4 ranks on 2 nodes: 2 network pairs at once
    text = page.evaluate("document.body.innerText")
    assert "4 ranks on 2 virtual nodes (run 1)" in text
    assert "the worst layout" not in text  # the probe is not an app group with a layout recommendation


def test_study_skips_missing_apps_with_a_note_and_reports(page: Page, tmp_path: Path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("hympi-info", "hympi-rb3d", "hympi-stream", "hympi-affinity", "hympi-pingpong"):
        (bin_dir / name).symlink_to(REPO / "build" / "bin" / name)
    out = tmp_path / "study"
    db = tmp_path / "s.db"
    start = time.monotonic()
    proc = hympi("study", "--quick", "--apps", "rb3d,spmv3d,pingpong", "--repeat", "1", "--out", str(out), "--db",
                 str(db), env={"HYMPI_BIN_DIR": str(bin_dir)}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert time.monotonic() - start < 120
    assert proc.stdout.strip().splitlines()[-1] == f"report: {(out / 'index.html').resolve()}"
    with Store.open(db, create=False) as store:
        runs = store.runs()
        study = store.study(1)
        sweeps = store.study_sweeps(1)
    rb3d = [r for r in runs if r.app == "rb3d"]
    assert sorted((r.ranks, r.threads, r.repeat) for r in rb3d) == [(1, 1, 0), (1, 1, 1), (1, 2, 0), (1, 2, 1),
                                                                    (2, 1, 0), (2, 1, 1)]  # warm-up + 1 each
    assert all(r.status == "ok" for r in rb3d)
    # The probe: 2 ranks inside the node (this machine has 2 cores), then 4 ranks on 2 virtual nodes.
    probes = [r for r in runs if r.app == "pingpong"]
    assert [(r.ranks, r.threads, r.status) for r in probes] == [(2, 1, "ok"), (4, 1, "ok")]
    assert [s.params["virtual_nodes"] for s in sweeps if s.app == "pingpong"] == [1, 2]
    assert "network" in probes[1].record["metrics"]["levels"]
    assert ("HYMPI_VIRTUAL_NODES", "2") in probes[1].env
    # On one NUMA domain the study also says why it runs one memory policy only (docs/study.md).
    assert tuple(n for n in study.notes if not n.startswith("memory policies: ")) == \
        ("spmv3d: skipped, hympi-spmv3d is not built yet",)
    page.open((out / "index.html").as_uri())
    assert page.errors() == []
    assert "spmv3d: skipped, hympi-spmv3d is not built yet" in page.evaluate("document.body.innerText")
    assert page.evaluate("Array.from(document.images).every(i => i.naturalWidth > 0)") is True
    assert page.evaluate("document.querySelectorAll('#hierarchy').length") == 1
    assert page.evaluate("document.querySelectorAll('#summary + ul a[href=\"#hierarchy\"]').length") == 1
    tables = page.evaluate("Array.from(document.querySelectorAll('table.levels')).map(t => "
                           "Array.from(t.querySelectorAll('tr[data-level]')).map(r => r.dataset.level))")
    order = ["pu", "core", "l2", "l3", "numa", "package", "node", "network"]
    assert tables == [sorted(r.record["metrics"]["levels"], key=order.index) for r in probes]
    images = page.evaluate("Array.from(document.querySelectorAll('#hierarchy ~ figure img')).map(i => "
                           "i.getAttribute('src'))")
    assert images == [f"pingpong-m1-r{r.id}-bandwidth.png" for r in probes]


def test_study_notes_a_missing_pingpong_binary(tmp_path: Path):
    """Only the probe asked for and its binary absent: a note, no sweep, and the study still writes its report."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "hympi-info").symlink_to(REPO / "build" / "bin" / "hympi-info")
    db = tmp_path / "s.db"
    proc = hympi("study", "--quick", "--apps", "pingpong", "--out", str(tmp_path / "study"), "--db", str(db),
                 env={"HYMPI_BIN_DIR": str(bin_dir)}, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        assert store.study(1).notes == ("pingpong: skipped, hympi-pingpong is not built yet",)
        assert store.runs() == [] and store.study_sweeps(1) == []
    assert "pingpong: skipped, hympi-pingpong is not built yet" in (tmp_path / "study" / "index.html").read_text()


def test_a_study_whose_runs_failed_writes_its_report_and_exits_1(tmp_path: Path):
    """Every launch failing (a launcher that exits 99): the study still records the runs and writes its report, but
    exits 1 with one line that counts them, as `hympi sweep` does, so that a batch job notices."""
    launcher = tmp_path / "mpirun"
    launcher.write_text("#!/bin/sh\nexit 99\n")
    launcher.chmod(0o755)
    out, db = tmp_path / "study", tmp_path / "s.db"
    proc = hympi("study", "--quick", "--apps", "stream", "--repeat", "1", "--no-warmup", "--ignore-load", "--out",
                 str(out), "--db", str(db), env={"HYMPI_MPIRUN": str(launcher), "HYMPI_MPI_FLAVOR": "openmpi"},
                 timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    with Store.open(db, create=False) as store:
        runs = store.runs()
    assert runs and {r.status for r in runs} == {"failed"}
    assert proc.stderr.strip().splitlines() == [
        f"hympi: {len(runs)} of {len(runs)} runs did not end ok ({len(runs)} failed); the report lists them under "
        "Runs"]
    assert proc.stdout.strip().splitlines()[-1] == f"report: {(out / 'index.html').resolve()}"
    assert "<h2 id='runs'>Runs</h2>" in (out / "index.html").read_text()


def test_the_report_prints_each_recommendation_as_the_sweep_did(tmp_path: Path):
    """On a login node the page is a copy away: `hympi report` prints the summary's recommendations, the same line
    the sweep printed at its end, one per app configuration."""
    env = fake_bin_dir(tmp_path)
    db = tmp_path / "r.db"
    sweep = hympi("sweep", "rb3d", "--ranks", "1,2", "--repeat", "2", "--ignore-load", "--db", str(db), "--",
                  "--sleep", "0", env={**env, "COLUMNS": "1000"})  # rich wraps at 80 columns in a pipe
    assert sweep.returncode == 0, sweep.stderr
    said = [line for line in sweep.stdout.splitlines() if line.startswith("rb3d ")]
    program = hympi("sweep", "/bin/true", "--repeat", "1", "--no-warmup", "--ignore-load", "--db", str(db))
    assert program.returncode == 0, program.stderr  # under the real mpirun: the fake one has no probe
    proc = hympi("report", "--db", str(db), "--out", str(tmp_path / "rep"), env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(said) == 1 and lines[0] == said[0], (said, lines)
    assert lines[1].startswith("true (no arguments): "), lines[1]
    assert lines[2:] == [f"report: {(tmp_path / 'rep' / 'index.html').resolve()}"]


def test_a_group_is_named_by_its_app_and_problem_and_by_its_subject_only_where_that_is_ambiguous():
    failed = replace(_run(1, 1, 1, None, "failed"), app="true")  # no record, so no problem: 'true', not 'true '
    one, other = (replace(_run(1, 1, 1, 1.0), app="a.out", record={"rate": 1.0, "problem": "p"}, sweep_id=sweep)
                  for sweep in (2, 3))
    groups = group_runs([failed, one, other], {1: 1, 2: 1, 3: 1}, {2: "/bin/a.out -x", 3: "/bin/a.out -y"})
    assert group_titles(groups) == ["true", "a.out p (/bin/a.out -x)", "a.out p (/bin/a.out -y)"]


def test_a_study_resumed_with_other_options_says_which_sweep_differs_and_how(tmp_path: Path):
    """`hympi study --resume` opens each app's sweep as `hympi sweep --resume` does, and says so as it does when
    nothing is left to continue (a new sweep began silently before)."""
    launcher = tmp_path / "mpirun"
    launcher.write_text("#!/bin/sh\nexit 99\n")  # every run fails at once: the sweeps are quick
    launcher.chmod(0o755)
    env = {"HYMPI_MPIRUN": str(launcher), "HYMPI_MPI_FLAVOR": "openmpi", "COLUMNS": "1000"}
    db = tmp_path / "s.db"

    def study(*args: str) -> subprocess.CompletedProcess[str]:
        return hympi("study", "--quick", "--apps", "stream", "--no-warmup", "--ignore-load", "--out",
                     str(tmp_path / "study"), "--db", str(db), *args, env=env, timeout=120)

    assert "--resume" not in study("--repeat", "1").stdout
    with Store.open(db) as store:
        ids = [sweep.id for sweep in store.study_sweeps(1)]  # STREAM's, and the cache levels'
        for sweep_id in ids:
            store.set_sweep_status(sweep_id, "interrupted")
    again = study("--repeat", "2", "--resume")
    # The cache levels' sweeps (fixed rounds) are resumed; STREAM's, now of 2 rounds, is new and names its twin, the
    # closest of the four interrupted (not the newest, a cache level's, which differs in its arguments too), and no
    # '--resume ID', which a study does not take.
    said = re.findall(r"^--resume: no unfinished sweep of stream has these parameters; the closest, sweep (\d+) "
                      r"\(interrupted\), differs in --repeat \(1 there, 2 here\)$", again.stdout, re.M)
    assert [int(n) for n in said] == ids[:1], again.stdout
    assert again.stdout.count(" resumed, ") == len(ids) - 1, again.stdout


def test_a_layout_is_one_text_in_tables_and_sentences():
    # hympi run's table said '1 ranks x 1 threads' beside the recommendation's '1 rank x 1 thread'.
    assert layout_words(1, 1) == "1 rank x 1 thread" and layout_words(2, 4) == "2 ranks x 4 threads"
    proc = hympi("run", "/bin/true")
    assert proc.returncode == 0, proc.stderr
    assert "│ layout          │ 1 rank x 1 thread " in proc.stdout, proc.stdout


def test_a_report_that_cannot_be_written_says_where_the_runs_are(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A full disk under the report directory: one HympiFatal line naming the directory and the database that still
    holds the runs (an "internal error (bug)" line, OSError, before)."""
    def full(path: Path, text: str) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(writer, "write_output", full)
    db, out = tmp_path / "r.db", tmp_path / "report"
    with Store.open(db) as store, pytest.raises(HympiFatal) as failed:
        write_report(store, ensure_out_dir(out))
    assert str(failed.value) == (f"cannot write the report into {out} (No space left on device); the runs are kept "
                                 f"in {db} (hympi report --db {db} --out {out} writes it again)")


def test_a_lead_on_too_few_runs_is_no_verdict_and_never_a_tie_break_against_it():
    # A sweep of 3 rounds (--repeat 3): rb3d 2x1 well ahead of 1x1 on 3 runs each. The tie-break (fewer
    # cores) must not recommend 1x1 against the data, nor may 2x1 be called faster on 3 runs.
    runs = [_run(1, 1, rep, rate) for rep, rate in enumerate((10.0, 10.4, 9.7), 1)]
    runs += [_run(2, 1, rep, rate) for rep, rate in enumerate((18.1, 17.6, 18.5), 1)]
    (group,) = group_runs(runs, {1: 1})
    assert verdict(group).recommended is None
    text = recommend(group)
    assert text.startswith("2x1 looks 1.81x 1x1 (95 % CI "), text  # 18.1 / 10.0
    assert text.endswith("on 3 runs: too few to say so (a verdict needs 4 runs a side); no verdict (measure each "
                         "layout 4 or more times: --repeat 4 or --repeat auto)."), text
    assert "choose" not in text and "Best" not in text and "recommended" not in text, text
    text = recommend(group_runs([*runs, _run(1, 1, 4, 10.1), _run(2, 1, 4, 17.9)], {1: 1})[0])  # a 4th round
    assert text.startswith("Best: 2 ranks x 1 thread"), text
    assert "2x1 is fastest (1.79x 1x1, 95 % CI " in text, text  # 18.0 / 10.05
    # 3 runs whose intervals overlap: no lead to confirm, so the tie-break's pick stands, said to be one.
    runs = [_run(1, 1, rep, rate) for rep, rate in enumerate((10.0, 12.0, 9.0), 1)]
    runs += [_run(2, 1, rep, rate) for rep, rate in enumerate((11.0, 9.5, 12.5), 1)]
    text = recommend(group_runs(runs, {1: 1})[0])
    assert "recommended: 1 rank x 1 thread" in text and "cannot be separated with 3 runs" in text, text
    assert "choose 1x1 for its fewer cores" in text, text


def test_a_tie_break_in_a_side_pair_never_contradicts_the_recommended_layout():
    # STREAM rates of a real quick study: 2x1 and 1x2 inside each other's noise, 1x2 chosen for its memory;
    # 1x1 is inside 1x2's noise but not 2x1's, so its pair with 1x2 must not say "choose 1x1".
    rates = {(1, 1): (14.84, 15.80, 16.07, 16.36), (1, 2): (15.16, 19.04, 16.42, 20.98, 20.89),
             (2, 1): (19.15, 21.02, 20.12, 21.21, 22.76)}
    runs = []
    for (ranks, threads), values in rates.items():
        for rep, rate in enumerate(values, 1):
            run = _run(ranks, threads, rep, rate)
            assert run.record is not None
            run.record["node_rss_mib"] = 399.0 * ranks
            runs.append(run)
    (group,) = group_runs(runs, {1: 1})
    text = recommend(group)
    assert "recommended: 1 rank x 2 threads" in text, text
    assert "1x1 and 1x2 are indistinguishable here" in text and "choose 1x1" not in text, text
    assert "choose 1x2 for its lower memory per node" in text, text


def test_report_tuning_section_shows_speedups_strategies_prediction_and_memory(page: Page, tmp_path: Path):
    store = tunedata.tuned_store(tmp_path / "t.db", tunedata.PROGRAMS[:4])
    configs = list(tunedata.space().configurations())
    tunedata.add_tune(store, 1, "is --class S", "guided", configs[:4], lambda c: tunedata.rule(0.05, 0.2, c))
    # A program no parameter speeds up, whose memory per process grows with the eager limit.
    eager = "btl_vader_eager_limit"
    tunedata.add_tune(store, 1, "stream --n 1", "exhaustive", configs, lambda c: 0.001 * (configs.index(c) % 3),
                      memory=lambda c: 130.0 if c.params().get(eager) == "65536" else 100.0)
    # ... and which computed with one of the two threads per rank its thread check gave it, profiled beside 1.4 cores
    # of other work; lu-mz profiled again beside 0.8, below the report's limit (1 core, below).
    store.add_profile(1, "stream --n 1", "stream", 4, 1,
                      {**tunedata.features(0.5, 0.5, working_threads=1), BUSY_PROFILE_NAME: 1.4}, {})
    store.add_profile(1, "lu-mz --class S", "lu-mz", 4, 1, {**tunedata.features(0.45, 0.5), BUSY_PROFILE_NAME: 0.8},
                      {})
    plain = Run(store.create_sweep(1, "rb3d", {"app": "rb3d"}, 1).id, "rb3d", 1, 1, "core", "compact", 1, (), (),
                ("mpirun",), "ok", 0, 1.0, {"rate": 5.0, "rate_unit": "GFLOP/s", "problem": "8^3", "verified": True})
    store.add_run(plain)
    out = ensure_out_dir(tmp_path / "report")
    index = write_report(store, out, cvars=tunedata.listing, disturbed_above=1.0)
    store.close()
    page.open(index.as_uri())
    assert page.errors() == []
    images = page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth])")
    tune_images = sorted(src for src, _ in images if src.startswith("tune-"))
    assert tune_images == ["tune-bt-mz-class-s-memory.png", "tune-is-class-s-memory.png",
                           "tune-is-class-w-memory.png", "tune-lu-mz-class-s-memory.png", "tune-prediction.png",
                           "tune-stream-n-1-memory.png"]
    assert all(width > 300 for _, width in images), images
    for src in tune_images:
        assert _image_stats(out / src)[2] > 0.05, src
    overview = {r[0]: r for r in _cells(page, "table.tune-speedup")}
    assert list(overview) == ["bt-mz --class S", "is --class S", "is --class W", "lu-mz --class S", "stream --n 1"]
    assert overview["is --class S"][1:4] == ["2", "12 of 12", "48"]  # two tunes; the exhaustive one is the reference
    assert overview["is --class S"][6].startswith("1.57x (95 % CI ")  # exp(0.27 + 0.18): low eager, no single copy
    assert overview["is --class S"][7].startswith("1.57x (95 % CI ")  # all of it from the parameters
    assert overview["stream --n 1"][6].startswith("indistinguishable (1.00x")
    text = page.evaluate("document.body.innerText")
    assert ("stream --n 1: no measurable difference between the best configuration and the default on this machine "
            "(indistinguishable (1.00x") in text
    assert "is --class S: its MPI parameters add 1.57x (95 % CI " in text
    assert "is --class S: no measurable difference" not in text
    guided = [r for r in _cells(page, "table.tune-strategies") if r[2] == "guided"]
    assert len(guided) == 1 and guided[0][4:6] == ["4", "16"] and guided[0][8] == "33 %"
    predicted = _cells(page, "table.tune-predicted")
    assert sorted(r[0] for r in predicted) == sorted(overview)
    # Four of the five programs share one best configuration: the constant pick is nearly as good, and the page
    # does not credit the features for the difference.
    assert "mean ratio predicted/best:" in text and "baseline:" in text
    assert "the profile features add nothing measurable here" in text
    assert text.count("picked among the configurations of at most") == 1
    assert ("stream --n 1: picked among the configurations of at most 1 thread per rank: it computed with no more "
            "when its thread check gave it more (the probe), and at its MPI share fewer computing ranks cannot be "
            "faster") in text
    assert text.count("profiled beside other work") == 1
    assert "stream --n 1: profiled beside other work (1.40 cores of it in the least disturbed of the runs)" in text
    assert ("btl_vader_eager_limit: memory per process differs by up to 23 % between its values" in text)
    assert "btl_vader_single_copy_mechanism: no measurable difference in memory per process (spread 0.0 %)" in text
    # The tune's runs are not an app group of their own; the plain sweep still is.
    assert page.evaluate("document.querySelectorAll('h2[id^=g]').length") == 1
    # Without tunes there is no Tuning section.
    with Store.open(tmp_path / "plain.db") as bare:
        machine = bare.ensure_machine("h", "t", "Open MPI", "gcc", {})
        bare.add_run(replace(plain, sweep_id=bare.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1).id))
        bare_index = write_report(bare, ensure_out_dir(tmp_path / "bare"))
    assert "id='tuning'" not in bare_index.read_text() and "id='g0'" in bare_index.read_text()


def test_tuning_verdicts_tell_too_few_runs_from_no_difference():
    from hympi.report.html import _verdict
    from hympi.tune.results import Speedup

    few = _verdict(Speedup(13.1, 8.7, 19.8, False, "13.10x (95 % CI 8.70-19.80): 3 runs a side are too few"), "A", "B")
    assert few == ("A measured 13.10x B (CI 8.70-19.80) on too few runs per configuration to say so (a verdict "
                   "needs 4 runs a side; tune with --repeat 4 or more)"), few
    same = _verdict(Speedup(1.01, 0.97, 1.05, False, "indistinguishable (1.01x)"), "A", "B")
    assert same == "no measurable difference between A and B on this machine (indistinguishable (1.01x))"
    assert "no evidence either way" in _verdict(Speedup(1.3, text="1.30x (no interval)"), "A", "B")
    assert _verdict(Speedup(1.3, 1.2, 1.4, True, "1.30x"), "A", "B") == ""


def _pencil_run(sweep: int, ranks: int, threads: int, repeat: int, steps: int, transpose_s: float,
                time_s: float) -> Run:
    """A stored hympi-pencil run: its rate, and the transposes and field memory in its metrics."""
    plane = 8 * 32 * 32 * 32 // ranks  # a 32^3 field of doubles split over the ranks
    metrics = {"grid": [32, 32, 32], "steps": steps, "transpose_s": transpose_s,
               "transpose_share": transpose_s / time_s, "plane_bytes_per_rank": plane,
               "pencil_bytes_per_rank": plane + 4096 * (ranks - 1)}
    record = {"rate": steps * 32**3 / time_s / 1e6, "rate_unit": "MDoF/s", "problem": "32^3", "verified": True,
              "time_s": time_s, "comm_s": transpose_s, "comp_s": time_s - transpose_s, "nodes": 1,
              "metrics": metrics}
    return Run(sweep, "pencil", ranks, threads, "core", "compact", repeat, ("--grid", "32", "32", "32"), (),
               ("mpirun",), "ok", 0, 1.0, record)


def test_report_shows_transposes_and_field_memory_per_layout(page: Page, tmp_path: Path):
    """Stored pencil runs with different step counts: times per step, the comparison engine's verdicts, memory."""
    store = Store.open(tmp_path / "p.db")
    machine = store.ensure_machine("h", "t", "Open MPI", "gcc", {"cores": 2, "memory_bytes": 2**30})
    sweep = store.create_sweep(machine.id, "pencil", {"app": "pencil"}, 1).id
    # 1x1: 10 steps, 0.1 s of transposes per step; 2x1 runs twice the steps in the same transpose time (0.05 s per
    # step: twice as fast per step, though its totals equal 1x1's); 1x2 is inside 2x1's noise.
    per_layout = {(1, 1): (10, (1.00, 1.02, 0.98, 1.01)), (2, 1): (20, (1.00, 1.03, 0.99, 1.02)),
                  (1, 2): (20, (1.01, 0.97, 1.04, 1.00))}
    for (ranks, threads), (steps, seconds) in per_layout.items():
        store.add_run(_pencil_run(sweep, ranks, threads, 0, steps, 9.0, 10.0))  # the warm-up: never counted
        for rep, t in enumerate(seconds, 1):
            store.add_run(_pencil_run(sweep, ranks, threads, rep, steps, t, 2.5 * t))
    plain = _run(1, 1, 1, 5.0)
    store.add_run(replace(plain, sweep_id=store.create_sweep(machine.id, "rb3d", {"app": "rb3d"}, 1).id))
    out = ensure_out_dir(tmp_path / "report")
    index = write_report(store, out)
    store.close()
    pngs = sorted(p.name for p in out.glob("*transposes.png"))
    assert len(pngs) == 1 and pngs[0].startswith("pencil-32-3-")  # none for rb3d, which records no transposes
    assert _image_stats(out / pngs[0])[2] > 0.05
    page.open(index.as_uri())
    assert page.errors() == []
    assert page.evaluate("Array.from(document.images).every(i => i.naturalWidth > 300)") is True
    rows = {r[0]: r for r in _cells(page, "table.transposes")}
    assert list(rows) == ["1x1", "2x1", "1x2"]
    assert rows["1x1"][1:5] == ["4", "1.005", "100.5", "40 %"]  # medians of the 4 timed runs, not the warm-up
    assert rows["2x1"][3] == "50.5" and rows["1x2"][3] == "50.25"  # per step: 1.01 s and 1.005 s over 20 steps
    plane, pencil = 8 * 32**3 / 2 / 2**20, (8 * 32**3 / 2 + 4096) / 2**20
    assert [float(c) for c in rows["2x1"][5:8]] == pytest.approx([plane, pencil, 2 * (plane + pencil)], rel=1e-2)
    assert rows["2x1"][8] == f"{100 * 2 * (plane + pencil) / 1024:.3g} %"
    verdicts = page.evaluate("Array.from(document.querySelectorAll('ul.transpose-verdicts li')).map(l => l.innerText)")
    # The fastest median (1x2) against the others: 1x1 is separated, 2x1 inside the noise and not ranked.
    assert verdicts[0].startswith("1x2 transposes 2.00x as fast as 1x1 per time step (95 % CI "), verdicts
    assert verdicts[1].startswith("2x1 and 1x2 are indistinguishable here (CI "), verdicts
    assert "choose" not in verdicts[1] and "faster" not in " ".join(verdicts)
    assert page.evaluate("document.querySelectorAll('table.transposes').length") == 1  # rb3d has none


def _layout_run(sweep: int, layout: str, threads: int, repeat: int, rate: float, per_node: dict[str, int]) -> Run:
    """A stored BT-MZ run of the data-layout experiment: its rate (Mop/s) and the page summary of its field u."""
    pages = sum(per_node.values())
    u: dict[str, object] = {"page_bytes": 4096, "pages": pages, "absent": 0, "per_node": per_node}
    if layout != "first-touch":
        u.update(on_intended=pages, share_on_intended=1.0)
    record = {"rate": rate, "rate_unit": "Mop/s", "problem": "class A", "verified": True, "time_s": 10.0,
              "nodes": 1, "metrics": {"data_layout": layout, "data_layout_placement": {"u": u}}}
    return Run(sweep, "bt-mz", 1, threads, "core", "compact", repeat, ("--class", "A", "--data-layout", layout), (),
               ("mpirun",), "ok", 0, 10.0, record)


def test_report_draws_the_data_layout_experiment_of_a_two_numa_machine(page: Page, tmp_path: Path):
    """Stored runs of the four layouts on a 2-NUMA machine: the figure, each layout against first touch with the
    comparison engine's words, the page placement; the same runs on a 1-NUMA machine get the message, no figure."""
    store = Store.open(tmp_path / "d.db")
    two = store.ensure_machine("numa2", "t2", "Open MPI", "gcc", {"cores": 16, "numa_nodes": 2, "packages": 2})
    one = store.ensure_machine("numa1", "t1", "Open MPI", "gcc", {"cores": 16, "numa_nodes": 1, "packages": 1})
    # Rate factors against first touch per thread count: at 16 threads (both domains) the layouts part; at 8 (one
    # domain, compact binding) only random's remote pages cost; at 1 the same.
    factor = {1: {"first-touch": 1.0, "one-location": 1.0, "access-pattern": 1.0, "random": 0.85},
              8: {"first-touch": 1.0, "one-location": 1.0, "access-pattern": 1.0, "random": 0.8},
              16: {"first-touch": 1.0, "one-location": 0.7, "access-pattern": 1.15, "random": 0.6}}
    base = {1: 1000.0, 8: 7000.0, 16: 12000.0}
    # Spread about a median of exactly 1, so the medians' ratios are the factors.
    noise = {"first-touch": (0.99, 1.0, 1.01, 1.0), "one-location": (1.0, 0.99, 1.0, 1.01),
             "access-pattern": (1.0, 1.01, 1.0, 0.99), "random": (1.01, 1.0, 0.99, 1.0)}
    placed = {"first-touch": {"0": 500, "1": 500}, "one-location": {"0": 1000},
              "access-pattern": {"0": 500, "1": 500}, "random": {"0": 507, "1": 493}}
    for machine in (two, one):
        for layout in noise:
            sweep = store.create_sweep(machine.id, "bt-mz", {"app": "bt-mz", "layout": layout}, 1).id
            for threads in base:
                per_node = placed[layout] if threads == 16 else {"0": 1000}
                if machine is one:
                    per_node = {"0": 1000}
                store.add_run(_layout_run(sweep, layout, threads, 0, 1.0, per_node))  # warm-up: never counted
                for rep, n in enumerate(noise[layout], 1):
                    rate = base[threads] * factor[threads][layout] * n
                    store.add_run(_layout_run(sweep, layout, threads, rep, rate, per_node))
    out = ensure_out_dir(tmp_path / "report")
    index = write_report(store, out)
    store.close()
    figures = sorted(out.glob("data-layout-*.png"))
    assert [p.name.split("-m")[-1].split("-")[0] for p in figures] == [str(two.id)]  # none for the 1-NUMA machine
    width, height, spread = _image_stats(figures[0])
    assert width > 300 and height > 200 and spread > 0.05
    page.open(index.as_uri())
    assert page.errors() == []
    assert page.evaluate("Array.from(document.images).map(i => [i.getAttribute('src'), i.naturalWidth > 300])") \
        == [[figures[0].name, True]]
    text = page.evaluate("document.querySelector('#data-layout').parentElement.innerText")
    assert "Recommendation." not in text  # the experiment's runs are no layout group of their own
    assert page.evaluate("document.querySelectorAll('#summary + ul a[href=\"#data-layout\"]').length") == 1
    verdicts = page.evaluate("Array.from(document.querySelectorAll('ul.data-layout-verdicts li')).map(l => "
                             "l.innerText)")
    assert "16 threads: access-pattern is 1.15x first-touch (95 % CI " in "\n".join(verdicts), verdicts
    assert "16 threads: first-touch is 1.43x one-location (95 % CI " in "\n".join(verdicts)
    assert "16 threads: first-touch is 1.67x random (95 % CI " in "\n".join(verdicts)
    assert "8 threads: first-touch and one-location are indistinguishable here (CI " in "\n".join(verdicts)
    assert "1 thread: access-pattern and first-touch are indistinguishable here (CI " in "\n".join(verdicts)
    assert not any("choose" in v for v in verdicts)  # no tie-break choice between data layouts
    tables = page.evaluate("Array.from(document.querySelectorAll('table.data-layout')).map(t => "
                           "Array.from(t.querySelectorAll('tr')).filter(r => r.querySelector('td'))"
                           ".map(r => Array.from(r.cells).map(c => c.innerText.trim())))")
    assert len(tables) == 2
    rows = {(r[0], r[1]): r for r in tables[0]}
    assert [(r[0], r[1]) for r in tables[0]][:4] == [("1", name) for name in
                                                     ("first-touch", "one-location", "access-pattern", "random")]
    assert rows[("16", "first-touch")][2:7] == ["4", "4", "11.88", "12", "12.12"]  # Gflop/s; warm-up left out
    assert rows[("16", "access-pattern")][7].startswith("1.15 (")
    assert rows[("16", "first-touch")][7] == "-"
    assert rows[("16", "one-location")][8:] == ["node 0 100 %", "100 %"]
    assert rows[("16", "random")][8] == "node 0 51 %, node 1 49 %"
    assert rows[("16", "first-touch")][9] == "-"  # first touch intends nothing
    assert all(r[7] == "-" for r in tables[1])  # one NUMA domain: no ratios
    notes = page.evaluate("Array.from(document.querySelectorAll('.data-layout-needs-numa')).map(n => n.innerText)")
    assert len(notes) == 1 and notes[0].startswith("the data-layout experiment needs >= 2 NUMA domains; this "
                                                   "machine has 1")
