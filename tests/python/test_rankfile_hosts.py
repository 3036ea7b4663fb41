"""Issue 30 B.11: `hympi place` writes only host names its own rankfile parser reads back. The rule is declared once
(hympi.place.rankfile.HOST_NAME): --hosts (and hosts gathered by `hympi info --all-nodes`) are checked with it
before anything is written, and read_rankfile parses with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import hympi
from hympi.errors import UsageError
from hympi.place.rankfile import check_host_names, read_rankfile
from hympi.topology import run_hympi_info

NODE = "synthetic:pack:1 core:2 pu:1"
GOOD = ("node0", "n_2", "node-1.example.org", "127.0.0.1", "localhost", "a", "9lives")
BAD = ("a b", "a\nb", "a\tb", "a#1", "a=b", "host:1", "-a", ".a", "", "nœud", "a,b", "+n0", "slot=0:0")


def files(path: Path) -> list[str]:
    """Every path under `path`."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def parses_back(name: str, tmp_path: Path) -> bool:
    """Whether read_rankfile reads a rankfile line naming host `name` back as exactly that host."""
    path = tmp_path / "probe.txt"
    path.write_text(f"rank 0={name} slot=0:0\n")
    try:
        entries = read_rankfile(path)
    except UsageError:
        return False
    return [e.host for e in entries] == [name]


@pytest.mark.parametrize("name", GOOD + BAD)
def test_the_check_and_the_parser_agree_on_every_name(name, tmp_path):
    try:
        check_host_names([name], "--hosts")
        accepted = True
    except UsageError:
        accepted = False
    assert accepted == (name in GOOD)
    assert parses_back(name, tmp_path) == accepted


@pytest.mark.parametrize("hosts", ["a b,c", "a\nx,c", "a#1,c", "a,host:1", "a,-c"])
def test_place_refuses_hosts_a_rankfile_cannot_hold_and_writes_nothing(hosts, tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    before = files(tmp_path)
    proc = hympi("place", "--matrix", str(matrix), "--topology", NODE, "--nodes", "2", "--hosts", hosts,
                 "--out", str(tmp_path / "r.txt"))
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "--hosts" in lines[0] and "not a rankfile host name" in lines[0], proc.stderr
    bad = next(h.strip() for h in hosts.split(",") if h.strip() not in GOOD)
    assert repr(bad) in lines[0]
    assert files(tmp_path) == before


def test_place_with_good_hosts_writes_a_rankfile_hympi_reads_back(tmp_path):
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    out = tmp_path / "r.txt"
    proc = hympi("place", "--matrix", str(matrix), "--topology", NODE, "--nodes", "2", "--hosts",
                 "node-1.example.org, n_2", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(e.host for e in read_rankfile(out)) == ["n_2", "node-1.example.org"]


def test_gathered_hosts_are_checked_too(tmp_path):
    base = {"node": 0, "host": "good-host", "ranks": 1, "source": NODE,
            "summary": json.loads(run_hympi_info(NODE, "json")), "xml": run_hympi_info(NODE, "xml")}
    gathered = tmp_path / "nodes.json"
    gathered.write_text(json.dumps({"nodes": [base, {**base, "node": 1, "host": "bad host"}]}))
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    proc = hympi("place", "--matrix", str(matrix), "--node-topologies", str(gathered), "--out", str(tmp_path / "r"))
    assert proc.returncode == 2, proc.stderr
    assert "'bad host'" in proc.stderr and "--node-topologies" in proc.stderr, proc.stderr
    assert not (tmp_path / "r").exists()
