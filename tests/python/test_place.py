"""`hympi place`: matrices, tree model, mapping quality (vs round-robin and brute force), rankfiles, bad input."""

from __future__ import annotations

import functools
import json
import random
from pathlib import Path

import pytest

import hympi.place.mapping as mapping
from conftest import REPO, hympi
from hympi.errors import UsageError
from hympi.paths import binary
from hympi.place.groups import Groups, contiguous_counts, group_shares, parse_groups
from hympi.place.matrix import CommMatrix, halo3d, read_matrix, ring, write_matrix
from hympi.place.placement import place
from hympi.place.rankfile import (
    binding_problems,
    check_rankfile_fits,
    expected_sets,
    local_host_names,
    read_rankfile,
    write_openmpi_rankfile,
)
from hympi.place.tree import ClusterTree, Slot, load_node_tree, parse_cpu_list, parse_cpuset

TOPOS = REPO / "tests" / "data" / "topologies"
TWO_BY_FOUR = "synthetic:pack:2 core:4 pu:1"  # one node: 2 packages x 4 cores


def random_matrix(n: int, seed: int) -> CommMatrix:
    """A sparse random traffic matrix (fixed seed)."""
    rnd = random.Random(seed)
    v = [[float(rnd.randint(1, 100)) if i != j and rnd.random() < 0.4 else 0.0 for j in range(n)] for i in range(n)]
    return CommMatrix.from_dense(v, f"random({n}, {seed})")


def test_cpuset_parsers():
    assert parse_cpuset("0x000000f0") == frozenset({4, 5, 6, 7})
    assert parse_cpuset("0x00000001,0x00000003") == frozenset({0, 1, 32})
    assert parse_cpu_list("0-2,8") == frozenset({0, 1, 2, 8})


def test_tree_distances_on_synthetic_topology():
    m = ClusterTree(load_node_tree("synthetic:pack:2 l3:1 l2:2 core:2 pu:2"), 2)
    assert m.cores_per_node == 8
    # core 0 vs: same L2 (core 1), same L3 (core 2), other package (core 4), other node.
    d = [m.distance(Slot(0, 0), Slot(0, c)) for c in (0, 1, 2, 4)]
    assert d == [0, 1, 2, 3]
    assert m.distance(Slot(0, 0), Slot(1, 0)) == 4
    assert m.level(Slot(0, 0), Slot(0, 4)) == "inter-package"
    assert m.level(Slot(0, 1), Slot(0, 3)) == "intra-package"


def test_recorded_xml_topologies_load():
    tree = load_node_tree(str(TOPOS / "dual-epyc-like.xml"))
    assert len(tree.cores) == 64 and tree.packages == 2 and tree.numa_nodes == 8
    smt = load_node_tree(str(TOPOS / "two-socket-smt.xml"))
    assert len(smt.cores) == 8 and all(len(c.pus) == 2 for c in smt.cores)


@pytest.mark.parametrize("matrix", [ring(16), halo3d((4, 2, 2))], ids=["ring", "halo3d"])
def test_beats_round_robin_off_node_share(matrix):
    report = place(matrix, TWO_BY_FOUR, nodes=2)
    by_name = {p.name: (c, s) for p, c, s in zip(report.placements, report.costs, report.shares, strict=True)}
    rr_cost, rr_share = by_name["round-robin"]
    tm_cost, tm_share = by_name["tree-map"]
    assert tm_share["inter-node"] < rr_share["inter-node"]
    assert tm_cost < rr_cost
    assert tm_cost <= by_name["block"][0]
    # A ring cut into two arcs crosses the network twice: 2 of 16 links.
    if matrix.source.startswith("ring"):
        assert tm_share["inter-node"] == pytest.approx(2 / 16)


SMALL_CASES = [
    ("synthetic:pack:2 core:2 pu:1", 2),
    ("synthetic:pack:2 l3:1 l2:2 core:1 pu:1", 2),
    ("synthetic:pack:2 core:4 pu:1", 1),
]


@pytest.mark.parametrize(("spec", "nodes"), SMALL_CASES)
@pytest.mark.parametrize(("exact_limit", "global_limit"),
                         [(mapping.EXACT_LIMIT, mapping.GLOBAL_LIMIT), (0, mapping.GLOBAL_LIMIT), (0, 0)],
                         ids=["exact-splits", "multilevel-splits", "multilevel-alone"])
def test_optimal_where_brute_force_is_possible(spec, nodes, exact_limit, global_limit, monkeypatch):
    monkeypatch.setattr(mapping, "EXACT_LIMIT", exact_limit)
    monkeypatch.setattr(mapping, "GLOBAL_LIMIT", global_limit)  # 0: no global swap pass to mend the splits
    cluster = ClusterTree(load_node_tree(spec), nodes)
    for k, matrix in enumerate(tiny_matrices()):
        placement = mapping.tree_map(cluster, matrix, 8 // nodes)
        assert len(set(placement.slots)) == len(placement.slots), "two ranks on one core"
        got = mapping.cost(cluster, matrix, placement.slots)
        assert got == pytest.approx(optimum(spec, nodes, k)), matrix.source


def tiny_matrices() -> tuple[CommMatrix, ...]:
    """8-rank matrices small enough for brute force."""
    return ring(8), halo3d((2, 2, 2)), random_matrix(8, 1), random_matrix(8, 2), random_matrix(8, 3)


@functools.cache
def optimum(spec: str, nodes: int, k: int) -> float:
    """Brute-force minimum cost of tiny_matrices()[k] (computed once per worker for all variants of the test)."""
    return mapping.brute_force(ClusterTree(load_node_tree(spec), nodes), tiny_matrices()[k])


def two_groups(coarse: int, fine: int, inside: float = 100.0, plane: float = 5.0) -> CommMatrix:
    """The two groups of Sillero et al., "Hybrid OpenMP-MPI turbulent boundary layer code over 32k cores" (§2.1):
    all-to-all transposes inside each group (`inside` per pair), the coarse ranks sending
    their part of the inflow plane to the fine group's first rank (`plane`)."""
    n = coarse + fine
    v = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i != j and (i < coarse) == (j < coarse):
                v[i][j] = inside
        if i < coarse:
            v[i][coarse] = plane
    return CommMatrix.from_dense(v, f"two_groups({coarse}, {fine})")


@pytest.mark.parametrize(("sizes", "per_node", "coarse_nodes", "fine_off"),
                         [((2, 6), None, {0}, 16 / 30),  # 2 + 6 on 2 x 4 slots: the fine group shares node 0
                          ((2, 4), 4, {0}, 0.0)],  # 1 + 1 nodes suffice: each group on a node of its own
                         ids=["sharing-a-node", "own-nodes"])
def test_groups_contiguous_keeps_each_groups_transposes_on_fewer_nodes(sizes, per_node, coarse_nodes, fine_off):
    matrix = two_groups(*sizes)
    groups = parse_groups(f"{sizes[0]}:{sizes[1]}", matrix.ranks)
    report = place(matrix, TWO_BY_FOUR, nodes=2, per_node=per_node, groups=groups)
    assert [p.name for p in report.placements] == ["round-robin", "block", "tree-map", "groups-contiguous",
                                                   "groups-interleaved"]
    by_name = {p.name: (p, s, g) for p, s, g in zip(report.placements, report.shares, report.group_shares,
                                                    strict=True)}
    cont, cont_all, cont_groups = by_name["groups-contiguous"]
    inter, inter_all, inter_groups = by_name["groups-interleaved"]
    assert report.best() is cont
    assert {s.node for s in cont.slots[: sizes[0]]} == coarse_nodes
    assert cont_groups["coarse"]["inter-node"] == 0.0 and inter_groups["coarse"]["inter-node"] == 1.0
    assert cont_groups["fine"]["inter-node"] == pytest.approx(fine_off)
    assert cont_groups["fine"]["inter-node"] < inter_groups["fine"]["inter-node"]
    assert cont_all["inter-node"] < inter_all["inter-node"]
    # Interleaved: each group dealt round robin from node 0 (a full node skipped), so both on both nodes.
    assert [s.node for s in inter.slots] == ([0, 1, 0, 1, 0, 1, 0, 1] if per_node is None else [0, 1, 0, 1, 0, 0])
    assert len(set(cont.slots)) == len(cont.slots) == matrix.ranks
    # Groups-contiguous is tree-mapped inside its groups: never worse than block, which is contiguous by accident.
    costs = dict(zip((p.name for p in report.placements), report.costs, strict=True))
    assert costs["groups-contiguous"] <= costs["block"] and costs["groups-contiguous"] < costs["groups-interleaved"]


def test_group_shares_and_contiguous_counts_by_hand():
    cluster = ClusterTree(load_node_tree(TWO_BY_FOUR), 3)
    assert contiguous_counts(cluster, Groups((2, 6)), 4) == [[2, 0, 0], [0, 4, 2]]  # own nodes: 1 + 2 <= 3
    assert contiguous_counts(cluster, Groups((3, 6)), 3) == [[3, 0, 0], [0, 3, 3]]
    assert contiguous_counts(cluster, Groups((5, 6)), 4) == [[4, 1, 0], [0, 3, 3]]  # 2 + 2 > 3: share node 1
    matrix = CommMatrix.from_dense(((0, 4, 1), (4, 0, 0), (0, 2, 0)))  # coarse 0-1: 8, fine 2: none, between 1 + 2
    slots = [Slot(0, 0), Slot(1, 0), Slot(1, 1)]
    shares = group_shares(cluster, matrix, Groups((2, 1)), slots)
    assert shares["coarse"] == {"volume": 8 / 11, "inter-node": 1.0}
    assert shares["fine"] == {"volume": 0.0, "inter-node": 0.0}
    assert shares["between"] == {"volume": 3 / 11, "inter-node": pytest.approx(1 / 3)}  # 0 -> 2 crosses, 2 -> 1 not


def test_place_groups_cli_writes_the_contiguous_map(tmp_path):
    path = tmp_path / "groups.txt"
    write_matrix(two_groups(2, 4), path)
    out = tmp_path / "rf"
    proc = hympi("place", "--matrix", str(path), "--topology", TWO_BY_FOUR, "--nodes", "2", "--ranks-per-node", "4",
                 "--groups", "2:4", "--hosts", "a,b", "--out", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["groups"] == [2, 4] and data["chosen"] == "groups-contiguous"
    assert data["mappings"]["groups-contiguous"]["groups"]["fine"]["inter-node"] == 0.0
    assert data["mappings"]["block"]["groups"]["fine"]["inter-node"] == pytest.approx(8 / 12)  # 2 + 2 over 2 nodes
    assert [(e.rank, e.host) for e in read_rankfile(out)] == [(0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "b"),
                                                               (5, "b")]
    proc = hympi("place", "--matrix", str(path), "--topology", TWO_BY_FOUR, "--nodes", "2", "--groups", "2:4")
    assert proc.returncode == 0, proc.stderr
    assert "groups-interleaved" in proc.stdout and "coarse (2 ranks)" in proc.stdout


def test_pencil_groups_profiled_with_pairwise_exchange_feed_groups_placement(tmp_path):
    """A real 2:4 hympi-pencil run: with --exchange pairwise the transposes are the matrix's traffic inside each
    group; with alltoallv they are collectives and only the inflow plane is left in it."""
    groups = Groups((2, 4))
    inside = {}
    for exchange in ("pairwise", "alltoallv"):
        out = tmp_path / f"{exchange}.json"
        proc = hympi("profile", "--quiet", "--out", str(out), "--", "mpirun", "--oversubscribe", "--bind-to", "none",
                     "-np", "6", str(binary("hympi-pencil")), "--grid", "16", "16", "16", "--steps", "1",
                     "--exchange", exchange, "--groups", "2:4", "--min-time", "0", timeout=120)
        assert proc.returncode == 0, proc.stderr
        matrix = read_matrix(out)
        labels = groups.labels
        pairs = set(zip(matrix.src.tolist(), matrix.dst.tolist(), strict=True))
        inside[exchange] = {(i, j) for i, j in pairs if labels[i] == labels[j]}
        assert any(labels[i] < labels[j] for i, j in pairs)  # coarse -> fine: the inflow plane, either way
    assert inside["pairwise"] == {(i, j) for g in (0, 1) for i in groups.members(g) for j in groups.members(g)
                                  if i != j}
    assert inside["alltoallv"] == set()
    proc = hympi("place", "--matrix", str(tmp_path / "pairwise.json"), "--topology", "synthetic:pack:1 core:4 pu:1",
                 "--nodes", "2", "--groups", "2:4", "--json")
    assert proc.returncode == 0, proc.stderr
    contiguous, spread = (json.loads(proc.stdout)["mappings"][f"groups-{k}"] for k in ("contiguous", "interleaved"))
    assert contiguous["groups"]["coarse"]["inter-node"] == 0.0 and spread["groups"]["coarse"]["inter-node"] == 1.0
    assert contiguous["shares"]["inter-node"] < spread["shares"]["inter-node"]


def test_matrix_text_round_trip(tmp_path):
    path = tmp_path / "m.txt"
    write_matrix(halo3d((2, 2, 1)), path, comment="2x2 halo")
    assert read_matrix(path).dense() == halo3d((2, 2, 1)).dense()


def test_rankfile_and_hydra_files(tmp_path):
    out = tmp_path / "rf"
    proc = hympi("place", "--matrix", str(write_ring(tmp_path, 8)), "--topology", TWO_BY_FOUR, "--nodes", "2",
                 "--hosts", "a,b", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    entries = read_rankfile(out)
    assert [e.rank for e in entries] == list(range(8))
    assert {e.host for e in entries} == {"a", "b"}
    cluster = ClusterTree(load_node_tree(TWO_BY_FOUR), 2)
    sets = expected_sets(cluster, entries)
    assert len({(e.host, frozenset(sets[e.rank])) for e in entries}) == 8  # distinct cores
    hydra = Path(f"{out}.hydra").read_text().splitlines()
    assert [line for line in hydra if not line.startswith("#")] == [f"{e.host}:1" for e in entries]
    assert any("-bind-to user:" in line for line in hydra)


def write_ring(tmp_path: Path, n: int) -> Path:
    """A ring matrix file."""
    path = tmp_path / f"ring{n}.txt"
    write_matrix(ring(n), path)
    return path


def test_rankfile_binding_is_checked(tmp_path):
    cluster = ClusterTree(load_node_tree(str(TOPOS / "ci-vm-2core.xml")), 1)
    rows_ok = [{"rank": 0, "thread": 0, "pu": 1, "bound": "1"}, {"rank": 1, "thread": 0, "pu": 0, "bound": "0"}]
    text = write_openmpi_rankfile(cluster, [Slot(0, 1), Slot(0, 0)], ["vm"])
    assert text == "rank 0=vm slot=0:1\nrank 1=vm slot=0:0\n"
    path = tmp_path / "test-rankfile-swap"
    path.write_text(text)
    assert binding_problems(rows_ok, path, cluster) == []
    rows_bad = [{**rows_ok[0], "bound": "0-1"}, {**rows_ok[1], "pu": 1, "bound": "0"}]
    problems = binding_problems(rows_bad, path, cluster)
    assert len(problems) == 2 and "rank 0" in problems[0] and "rank 1" in problems[1]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("rank 0={host} slot=0:0\nrank 1={host} slot=0:2\n", "slot=0:2"),  # the 2-core VM has cores 0:0, 0:1
        ("rank 0={host} slot=1:0\nrank 1={host} slot=0:0\n", "slot=1:0"),  # and one package
        ("rank 0={host} slot=0:0\nrank 1=elsewhere slot=0:1\n", "elsewhere"),
        ("rank 0={host} slot=0:0\n", "0..1"),
    ],
)
def test_rankfile_must_fit_the_machine(tmp_path, monkeypatch, text, needle):
    for var in ("SLURM_JOB_NODELIST", "PBS_NODEFILE", "LSB_HOSTS", "OMPI_MCA_orte_default_hostfile",
                "OMPI_MCA_prte_default_hostfile"):
        monkeypatch.delenv(var, raising=False)
    cluster = ClusterTree(load_node_tree(str(TOPOS / "ci-vm-2core.xml")), 1)
    path = tmp_path / "rf"
    host = sorted(local_host_names())[0]
    path.write_text(text.format(host=host))
    with pytest.raises(UsageError, match=needle):
        check_rankfile_fits(path, 2, cluster)
    path.write_text(f"rank 0={host} slot=0:1\nrank 1=localhost slot=0:0\n")
    assert [e.core for e in check_rankfile_fits(path, 2, cluster)] == [1, 0]
    # Inside an allocation other hosts are allowed (their nodes are assumed to look like this one).
    monkeypatch.setenv("SLURM_JOB_NODELIST", "n[1-2]")
    path.write_text("rank 0=n1 slot=0:1\nrank 1=n2 slot=0:1\n")
    assert [e.host for e in check_rankfile_fits(path, 2, cluster)] == ["n1", "n2"]


def test_rankfile_takes_effect_end_to_end(tmp_path):
    """hympi place on this machine -> hympi run affinity --rankfile: every rank on its slot's PUs."""
    matrix = tmp_path / "pair.txt"
    matrix.write_text("0 5\n5 0\n")
    rf = tmp_path / "rf"
    assert hympi("place", "--matrix", str(matrix), "--out", str(rf)).returncode == 0
    # Swap the two slots so the check cannot pass by rank r landing on core r by default.
    lines = rf.read_text().splitlines()
    swapped = [lines[0].rsplit("slot=", 1)[0] + "slot=" + lines[1].rsplit("slot=", 1)[1],
               lines[1].rsplit("slot=", 1)[0] + "slot=" + lines[0].rsplit("slot=", 1)[1]]
    rf.write_text("\n".join(swapped) + "\n")
    proc = hympi("run", "affinity", "--ranks", "2", "--rankfile", str(rf), "--json", "--", "--check")
    assert proc.returncode == 0, proc.stderr
    assert "rankfile check: PASSED" in proc.stderr
    rec = json.loads(proc.stdout.strip().splitlines()[-1])
    assert rec["bind"] == "none"  # the app must not rebind what mpirun bound
    by_rank = {row["rank"]: row["core"] for row in rec["binding"]}
    assert by_rank == {0: 1, 1: 0}


@pytest.mark.parametrize(
    ("content", "extra", "needle"),
    [
        ("0 1 2\n1 0 1\n", [], "not square"),
        ("0 -1\n1 0\n", [], "-1"),
        ("0 x\n1 0\n", [], "'x'"),
        ("0 nan\n1 0\n", [], "nan"),
        ("", [], "empty"),
        ("ranks 2\n0 1 -3\n", [], "m.txt:2: volume '-3' must be finite and >= 0"),  # coordinate lists
        ("ranks 2\n# c\n0 2 1\n", [], "m.txt:3: rank 2 out of range 0..1"),
        ("ranks 2\n0 1\n", [], "m.txt:2: expected 'src dst volume', got '0 1'"),
        ("0 1 1\n1 0 1\n1 1 0\n", ["--topology", "synthetic:pack:1 core:2 pu:1"], "3 ranks"),
        ("0 1\n1 0\n", ["--topology", "synthetic:pack:1 core:2 pu:1", "--nodes", "2", "--ranks-per-node", "3"], "3"),
        ("0 1\n1 0\n", ["--topology", "/nonexistent/machine.xml"], "/nonexistent/machine.xml"),
        ("0 1\n1 0\n", ["--topology", "synthetic:pack:zero"], "pack:zero"),
        ("0 1\n1 0\n", ["--nodes", "0"], "0"),
        ("0 1\n1 0\n", ["--fill", "sideways"], "sideways"),
        ("0 1\n1 0\n", ["--nodes", "2", "--hosts", "a"], "a"),
        ("0 1\n1 0\n", ["--nodes", "2", "--hosts", "a,a"], "--hosts: host name 'a' is given twice"),
        ("0 1\n1 0\n", ["--nodes", "1", "--hosts", "h" * 254], "has 254 characters, more than the 253"),
        ("0 1e308\n1e308 0\n", [], "m.txt: total volume inf exceeds hympi's limit of 1e+30"),  # each entry finite
        ("ranks 2\n0 1 1e308\n0 1 1e308\n", [], "total volume inf exceeds"),  # repeated pairs add up
        ("ranks 2\n0 1 2e30\n", [], "total volume 2e+30 exceeds"),
        ("0 1\n1 0\n", ["--groups", "1:2"], "adds up to 3 ranks but the matrix has 2"),
        ("0 1\n1 0\n", ["--groups", "2:0"], "leaves the fine group empty"),
        ("0 1\n1 0\n", ["--groups", "1:1:0"], "has 3 groups"),
        ("0 1\n1 0\n", ["--groups", "2"], "'2' must be COARSE:FINE"),
        ("0 1\n1 0\n", ["--groups", "one:1"], "'one:1' must be COARSE:FINE with integer sizes"),
        ("0 1\n1 0\n", ["--groups", "auto"], "'auto' cannot be placed"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path, content, extra, needle):
    matrix = tmp_path / "m.txt"
    matrix.write_text(content)
    proc = hympi("place", "--matrix", str(matrix), *extra)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]


def test_unreadable_matrix_and_bad_xml(tmp_path):
    proc = hympi("place", "--matrix", str(tmp_path / "missing.txt"))
    assert proc.returncode == 2 and "missing.txt" in proc.stderr
    bad = tmp_path / "bad.xml"
    bad.write_text("<topology><object type=")
    matrix = tmp_path / "m.txt"
    matrix.write_text("0 1\n1 0\n")
    proc = hympi("place", "--matrix", str(matrix), "--topology", str(bad))
    assert proc.returncode == 2 and "bad.xml" in proc.stderr
