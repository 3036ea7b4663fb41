"""Unlike nodes: `hympi info --all-nodes` (each node's own topology, gathered by a launched job; virtual nodes given
synthetic topologies through --node-topology) and `hympi place` on per-node trees."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from conftest import REPO, hympi
from hympi.cli import main
from hympi.cli.info import print_nodes
from hympi.errors import UsageError
from hympi.node_topologies import parse_node_topologies
from hympi.place.mapping import cost
from hympi.place.matrix import CommMatrix
from hympi.place.placement import place
from hympi.place.rankfile import read_rankfile
from hympi.place.tree import ClusterTree, Slot, load_node_tree
from hympi.topology import machine_summary

SMALL = "synthetic:pack:2 core:1 pu:1"  # 2 cores, one per package: any two ranks on it cross packages
BIG = "synthetic:pack:2 core:2 pu:1"  # 4 cores, two per package
TWO_BY_FOUR, ONE_BY_EIGHT = "synthetic:pack:2 core:4 pu:1", "synthetic:pack:1 core:8 pu:1"


def pair_and_ring() -> CommMatrix:
    """6 ranks: 0 and 1 talk heavily, 2..5 in a light ring."""
    v = [[0.0] * 6 for _ in range(6)]
    v[0][1] = v[1][0] = 100.0
    for a, b in ((2, 3), (3, 4), (4, 5), (5, 2)):
        v[a][b] = v[b][a] = 1.0
    return CommMatrix.from_dense(v, "pair+ring")


def test_all_nodes_identical_and_hash_of_the_real_node(capsys: pytest.CaptureFixture[str]) -> None:
    proc = hympi("info", "--all-nodes", "--ranks", "3", "--virtual-nodes", "2", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [n["node"] for n in data["nodes"]] == [0, 1]
    assert [n["ranks"] for n in data["nodes"]] == [2, 1]
    assert data["nodes"][0]["host"].endswith("/vn0") and data["nodes"][1]["host"].endswith("/vn1")
    assert data["identical"] and data["differences"] == []
    # The XML each node sent round-trips to the hash hympi-info reports for this machine.
    plain = machine_summary("this")
    assert {n["summary"]["hash"] for n in data["nodes"]} == {plain.hash}
    assert data["nodes"][0]["summary"]["cores"] == plain.cores
    print_nodes(parse_node_topologies(proc.stdout, "test"))
    assert f"all 2 nodes identical (hash {plain.hash})" in capsys.readouterr().out


def test_all_nodes_differing_synthetic_nodes_then_placement(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    specs = f"{TWO_BY_FOUR};{ONE_BY_EIGHT};{TWO_BY_FOUR}"
    proc = hympi("info", "--all-nodes", "--virtual-nodes", "3", "--node-topology", specs, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert [n["source"] for n in data["nodes"]] == specs.split(";")
    assert [(n["summary"]["packages"], n["summary"]["cores"]) for n in data["nodes"]] == [(2, 8), (1, 8), (2, 8)]
    assert not data["identical"]
    assert [g["nodes"] for g in data["groups"]] == [[0, 2], [1]]
    assert data["differences"] == [{"field": "packages", "values": [{"value": "2", "nodes": [0, 2]},
                                                                     {"value": "1", "nodes": [1]}]}]
    print_nodes(parse_node_topologies(proc.stdout, "test"))
    text = capsys.readouterr().out
    assert "2 kinds of node: what differs" in text and "packages" in text and "identical" not in text
    saved = tmp_path / "nodes.json"
    saved.write_text(proc.stdout)
    # 20 ranks in a chain on three 8-core nodes: no node gets more ranks than its cores.
    matrix = tmp_path / "chain.txt"
    matrix.write_text("\n".join(" ".join("5" if abs(i - j) == 1 else "0" for j in range(20)) for i in range(20)))
    out = tmp_path / "ranks.txt"
    assert main(["place", "--matrix", str(matrix), "--node-topologies", str(saved), "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["cores_per_node"] == [8, 8, 8] and report["ranks_per_node"] == [7, 7, 6]
    per_host = Counter(e.host for e in read_rankfile(out))
    assert per_host == {"node0": 7, "node1": 7, "node2": 6}  # virtual nodes share a host: hosts by node index


def refused(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """`hympi ARGS` run in-process (no interpreter start per case) must exit 2 with one line on stderr."""
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("hympi: error: ")
    return err


@pytest.mark.parametrize(("args", "needle"), [
    (["--node-topology", "synthetic:pack:2 bogus:3"], "bogus"),
    (["--node-topology", f"{SMALL};;{BIG}"], "empty entry 1"),
    (["--node-topology", f"{SMALL};{BIG};{SMALL}"], "3 topologies for 2 node(s)"),
    (["--topology", SMALL], "--topology"),
    (["--ranks", "1"], "needs at least 2 ranks"),
])
def test_all_nodes_bad_input(args: list[str], needle: str, fake_launcher: tuple[dict[str, str], Path],
                             capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    env, marker = fake_launcher
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert needle in refused(["info", "--all-nodes", "--virtual-nodes", "2", *args], capsys)
    if args[0] != "--topology":  # the launch's options mean nothing to plain `hympi info`
        assert f"{args[0]} needs --all-nodes" in refused(["info", *args], capsys)
    assert not marker.exists(), "a launcher was started for bad input"


def test_like_trees_make_a_plain_cluster_and_short_nodes_are_padded() -> None:
    big, small = load_node_tree(BIG), load_node_tree(SMALL)
    assert ClusterTree.of_nodes([big, load_node_tree(BIG)]).uniform
    mixed = ClusterTree.of_nodes([small, big])
    assert not mixed.uniform and [mixed.cores_of(k) for k in range(2)] == [2, 4]
    with pytest.raises(ValueError):
        _ = mixed.cores_per_node
    # Sharing only the node costs the same on both nodes: the short node's missing level counts as unshared.
    assert mixed.distance(Slot(0, 0), Slot(0, 1)) == mixed.distance(Slot(1, 0), Slot(1, 2)) == 2
    assert mixed.distance(Slot(1, 0), Slot(1, 1)) == 1 and mixed.distance(Slot(0, 0), Slot(1, 0)) == 3


def test_heavy_pair_lands_in_the_big_nodes_package_as_brute_force_does() -> None:
    matrix = pair_and_ring()
    report = place(matrix, node_trees=(load_node_tree(SMALL), load_node_tree(BIG)))
    assert report.node_ranks == (2, 4)  # ranks follow each node's cores
    best = report.best()
    cluster = report.cluster
    a, b = best.slots[0], best.slots[1]
    assert a.node == b.node == 1 and cluster.level(a, b) == "intra-package"
    every = [Slot(k, c) for k in range(cluster.nodes) for c in range(cluster.cores_of(k))]
    optimum = min(cost(cluster, matrix, p) for p in itertools.permutations(every, matrix.ranks))
    chosen = report.costs[[p.name for p in report.placements].index("tree-map")]
    assert chosen == pytest.approx(optimum)
    assert chosen < min(report.costs[:2])  # round-robin and block put the pair on the small node or apart
    for placement in report.placements:
        on_node = Counter(s.node for s in placement.slots)
        assert all(on_node[k] <= cluster.cores_of(k) for k in on_node), placement.name
        assert len(set(placement.slots)) == matrix.ranks, placement.name


def test_place_on_unlike_topologies_from_the_command_line(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    matrix = tmp_path / "m.txt"
    matrix.write_text("\n".join(" ".join(str(int(x)) for x in row) for row in pair_and_ring().dense()))
    out = tmp_path / "ranks.txt"
    assert main(["place", "--matrix", str(matrix), "--topology", SMALL, "--topology", BIG, "--out", str(out)]) == 0
    assert "2 unlike nodes: 2+4 cores, 2+4 ranks" in capsys.readouterr().out
    entries = read_rankfile(out)
    assert Counter(e.host for e in entries) == {"node0": 2, "node1": 4}
    assert {(e.host, e.package) for e in entries if e.rank in (0, 1)} == {("node1", entries[0].package)}


@pytest.mark.parametrize(("args", "needle"), [
    (["--topology", SMALL, "--topology", BIG, "--ranks-per-node", "3"], "exceeds the 2 cores of node 0"),
    (["--topology", SMALL, "--topology", BIG, "--nodes", "3"], "--nodes 3 contradicts the 2 node topologies"),
    (["--topology", SMALL, "--topology", BIG, "--groups", "2:4"], "--groups needs identical nodes"),
    (["--topology", SMALL, "--node-topologies", "x.json"], "give one of them"),
    (["--node-topologies", "missing.json"], "cannot read node topologies missing.json"),
])
def test_place_unlike_bad_input(args: list[str], needle: str, tmp_path: Path,
                                capsys: pytest.CaptureFixture[str]) -> None:
    matrix = tmp_path / "m.txt"
    matrix.write_text("\n".join(" ".join(str(int(x)) for x in row) for row in pair_and_ring().dense()))
    out = tmp_path / "ranks.txt"
    assert needle in refused(["place", "--matrix", str(matrix), *args, "--out", str(out)], capsys)
    assert not out.exists()


@pytest.mark.parametrize(("text", "why"), [
    ("{}", "no 'nodes' where hympi info writes one"),
    ("[]", "a value of the wrong type"),
    ('{"nodes": [5]}', "a value of the wrong type"),
    ('{"nodes": [{"node": "x"}]}', "a value of the wrong type"),
    ('{"nodes": [', "not JSON: Expecting value at line 1 column 12"),
])
def test_foreign_json_is_refused_in_words(text: str, why: str) -> None:
    """Not Python's exception names ("KeyError: 'nodes'", "TypeError: list indices ...")."""
    with pytest.raises(UsageError) as refused:
        parse_node_topologies(text, "t.json")
    assert str(refused.value).startswith(f"t.json is not the JSON of hympi info --all-nodes --json ({why}")
    assert "Error" not in str(refused.value)


@pytest.mark.parametrize("config", ["missing.toml", "bad.toml"])
def test_hympi_info_refuses_a_bad_config_file_with_or_without_all_nodes(tmp_path: Path, config: str) -> None:
    """The binary read --config only with --all-nodes: a missing or broken file was ignored, exit 0."""
    (tmp_path / "bad.toml").write_text("unknown_key = 3\n")
    binary = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin") / "hympi-info"
    proc = subprocess.run([str(binary), "--config", str(tmp_path / config)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and str(tmp_path / config) in proc.stderr
    assert not proc.stdout
