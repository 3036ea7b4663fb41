"""The launcher-neutral layout spec: every launcher's arguments (table-driven), the intended cpusets on synthetic
nodes, launcher detection, bad input through `hympi layout`, and the real affinity check with Open MPI 4."""

from __future__ import annotations

import importlib.util
import shutil

import pytest

import skips
from conftest import REPO, hympi
from hympi.cli import main
from hympi.errors import UsageError
from hympi.launch.banner import target_of_banner
from hympi.launch.detect import probe
from hympi.launch.layout import LayoutSpec, cpu_list
from hympi.launch.layout_check import layout_mismatches
from hympi.launch.mpirun import LaunchSpec, build_command, run_command
from hympi.place.tree import load_node_tree

NODE = "synthetic:pack:2 numa:2 core:8 pu:2"  # 2 packages x 2 NUMA x 8 cores x 2 PUs: core c has PUs 2c, 2c+1
ERR = UsageError


@pytest.fixture(scope="module")
def node():
    return load_node_tree(NODE)


# (layout, openmpi4, openmpi5, mpich, slurm): a tuple is the exact argument list, ERR means "no exact spelling".
CASES = [
    (LayoutSpec(2, 4, 4, "core"),
     "-np 8 --map-by ppr:4:node:PE=4 --bind-to core", "-np 8 --map-by ppr:4:node:pe=4 --bind-to core",
     "-n 8 -ppn 4 -bind-to core:4",
     "--nodes 2 --ntasks 8 --ntasks-per-node 4 --cpus-per-task 4 --cpu-bind=cores --distribution=block:block"),
    (LayoutSpec(2, 4, 2, "core", "scatter"),
     "-np 8 --map-by ppr:1:numa:PE=2 --rank-by numa --bind-to core",
     "-np 8 --map-by ppr:1:numa:pe=2 --rank-by numa --bind-to core", "-n 8 -ppn 4 -bind-to core:2 -map-by numa", ERR),
    (LayoutSpec(1, 6, 1, "core", "scatter"), ERR, ERR, "-n 6 -bind-to core:1 -map-by numa", ERR),
    (LayoutSpec(2, 4, 1, "numa", "scatter"), "-np 8 --map-by ppr:1:numa --bind-to numa",
     "-np 8 --map-by ppr:1:numa --bind-to numa", "-n 8 -ppn 4 -bind-to numa", ERR),
    (LayoutSpec(1, 8, 2, "numa", "compact"), "-np 8 --map-by ppr:2:numa --bind-to numa",
     "-np 8 --map-by ppr:2:numa --bind-to numa", ERR, ERR),
    (LayoutSpec(1, 8, 2, "numa", "scatter"), "-np 8 --map-by ppr:2:numa --rank-by numa --bind-to numa",
     "-np 8 --map-by ppr:2:numa --rank-by numa --bind-to numa", "-n 8 -bind-to numa", ERR),
    (LayoutSpec(1, 4, 4, "package", "compact"), "-np 4 --map-by ppr:2:socket --bind-to socket",
     "-np 4 --map-by ppr:2:package --bind-to package", ERR, ERR),
    (LayoutSpec(2, 4, 4, "package", "scatter"), "-np 8 --map-by ppr:2:socket --rank-by socket --bind-to socket",
     "-np 8 --map-by ppr:2:package --rank-by package --bind-to package", "-n 8 -ppn 4 -bind-to socket",
     "--nodes 2 --ntasks 8 --ntasks-per-node 4 --cpus-per-task 4 --cpu-bind=sockets --distribution=block:cyclic"),
    (LayoutSpec(1, 2, 16, "package"), "-np 2 --map-by ppr:1:socket --bind-to socket",
     "-np 2 --map-by ppr:1:package --bind-to package", "-n 2 -bind-to socket",
     "--nodes 1 --ntasks 2 --ntasks-per-node 2 --cpus-per-task 16 --cpu-bind=sockets --distribution=block:cyclic"),
    (LayoutSpec(1, 1, 8, "numa"), "-np 1 --map-by ppr:1:node --bind-to numa",
     "-np 1 --map-by ppr:1:node --bind-to numa", "-n 1 -bind-to numa",
     "--nodes 1 --ntasks 1 --ntasks-per-node 1 --cpus-per-task 8 --cpu-bind=ldoms --distribution=block:block"),
    (LayoutSpec(1, 40, 1, "core", oversubscribe=True),
     "-np 40 --oversubscribe --map-by ppr:40:node:PE=1:OVERSUBSCRIBE --bind-to core:overload-allowed",
     "-np 40 --map-by ppr:40:node:pe=1:oversubscribe --bind-to core:overload", "-n 40 -bind-to core:1",
     "--nodes 1 --ntasks 40 --ntasks-per-node 40 --cpus-per-task 1 --overcommit --cpu-bind=cores "
     "--distribution=block:block"),
    (LayoutSpec(2, 3, 1, "none"), "-np 6 --map-by ppr:3:node --bind-to none",
     "-np 6 --map-by ppr:3:node --bind-to none", "-n 6 -ppn 3 -bind-to none",
     "--nodes 2 --ntasks 6 --ntasks-per-node 3 --cpus-per-task 1 --cpu-bind=none"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0].nodes}x{c[0].ranks_per_node}x{c[0].threads}-"
                                                      f"{c[0].bind}-{c[0].dist}")
def test_every_launcher_spells_the_layout(case, node):
    layout, *expected = case
    for target, want in zip(("openmpi4", "openmpi5", "mpich", "slurm"), expected, strict=True):
        if want is ERR:
            with pytest.raises(UsageError):
                layout.arguments(target, node)
        else:
            assert " ".join(layout.arguments(target, node)) == want, target


def test_rankfile_is_spelled_per_launcher(tmp_path, node):
    rf = tmp_path / "ranks"
    rf.write_text("rank 0=a slot=1:0\nrank 1=a slot=0:3\nrank 2=b slot=1:0\nrank 3=b slot=0:3\n")
    layout = LayoutSpec(2, 2, 1, rankfile=str(rf))
    assert layout.arguments("openmpi4", node) == ("-np", "4", "--rankfile", str(rf))
    assert layout.arguments("openmpi5", node) == ("-np", "4", "--map-by", f"rankfile:file={rf}")
    # Package 1's first core is core 16 (PUs 32, 33); package 0's core 3 has PUs 6, 7.
    assert layout.arguments("mpich", node)[-2:] == ("-bind-to", "user:32+33,6+7")
    assert layout.arguments("slurm", node)[-1] == f"--cpu-bind=mask_cpu:{hex(3 << 32)},{hex(3 << 6)}"
    assert [(p.node, p.rank, cpu_list(p.cpus)) for p in layout.placements(node)] == \
        [(0, 0, "32-33"), (0, 1, "6-7"), (1, 2, "32-33"), (1, 3, "6-7")]
    rf.write_text("rank 0=a slot=1:0\nrank 1=a slot=0:3\nrank 2=b slot=0:3\nrank 3=b slot=1:0\n")
    with pytest.raises(UsageError, match="places the nodes' ranks differently"):
        layout.arguments("mpich", node)


def sets(layout, node):
    return {(p.node, p.rank, p.thread): cpu_list(p.cpus) for p in layout.placements(node)}


def test_cpusets_of_core_binding(node):
    compact = sets(LayoutSpec(2, 2, 4, "core"), node)
    assert [compact[(0, 0, t)] for t in range(4)] == ["0-1", "2-3", "4-5", "6-7"]
    assert compact[(0, 1, 0)] == "8-9" and compact[(1, 2, 0)] == "0-1" and compact[(1, 3, 3)] == "14-15"
    scatter = sets(LayoutSpec(1, 8, 2, "core", "scatter"), node)  # over the 4 NUMA domains (cores 0, 8, 16, 24)
    assert [scatter[(0, r, 0)] for r in range(5)] == ["0-1", "16-17", "32-33", "48-49", "4-5"]
    assert scatter[(0, 4, 1)] == "6-7"
    wrapped = sets(LayoutSpec(1, 33, 1, "core", oversubscribe=True), node)
    assert wrapped[(0, 32, 0)] == "0-1"  # more ranks than cores wrap around, as hympi's own binding does


def test_cpusets_of_domain_binding(node):
    numa = sets(LayoutSpec(1, 8, 1, "numa"), node)
    assert [numa[(0, r, 0)] for r in range(8)] == ["0-15", "0-15", "16-31", "16-31", "32-47", "32-47", "48-63",
                                                   "48-63"]
    numa_scatter = sets(LayoutSpec(1, 8, 1, "numa", "scatter"), node)
    assert [numa_scatter[(0, r, 0)] for r in range(5)] == ["0-15", "16-31", "32-47", "48-63", "0-15"]
    package = sets(LayoutSpec(2, 2, 3, "package"), node)
    assert package[(0, 0, 2)] == "0-31" and package[(0, 1, 0)] == "32-63" and package[(1, 3, 1)] == "32-63"


def test_layout_that_does_not_fit_is_refused(node):
    with pytest.raises(UsageError, match="4 ranks per node x 9 threads = 36 exceeds the 32 cores"):
        LayoutSpec(1, 4, 9).check(node)
    LayoutSpec(1, 4, 9, oversubscribe=True).check(node)
    with pytest.raises(UsageError, match="unknown binding 'l3'"):
        LayoutSpec(1, 1, 1, "l3").check(node)


@pytest.mark.parametrize(("banner", "target"), [
    ("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/", "openmpi4"),
    ("mpiexec (OpenRTE) 4.0.3", "openmpi4"), ("mpirun (Open MPI) 5.0.3", "openmpi5"),
    ("HYDRA build details:\n    Version:                                 4.0.2", "mpich"),
    ("slurm 22.05.8", "slurm"), ("slurm-wlm 23.11.4", "slurm"), ("Intel(R) MPI Library", None), ("", None)])
def test_launcher_target_comes_from_the_banner(banner, target):
    assert target_of_banner(banner) == target


@skips.needs(skips.Reason.OPEN_MPI, skips.have_mpirun(), "mpirun is not on PATH")
def test_installed_launchers_are_detected():
    found, banner = probe(shutil.which("mpirun") or "")
    assert found is not None and found.target in ("openmpi4", "openmpi5", "mpich"), banner
    if shutil.which("mpiexec.mpich"):
        hydra, _ = probe(shutil.which("mpiexec.mpich") or "")
        assert hydra is not None and hydra.target == "mpich" and hydra.version.startswith("HYDRA ")


def layout_cli(capsys, *args: str) -> tuple[int, str, str]:
    """`hympi layout --topology NODE ARGS` in-process (the node's tree is loaded once), ARGS' own --topology instead
    when they give one: (exit code, stdout, stderr)."""
    code = main(["layout", *([] if "--topology" in args else ["--topology", NODE]), *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_layout_cli_prints_arguments_environment_and_cpusets(capsys):
    code, out, err = layout_cli(capsys, "--nodes", "2", "--ranks-per-node", "2", "--threads", "2", "--for", "openmpi5")
    assert code == 0, err
    lines = out.splitlines()
    assert "arguments: mpirun -np 4 --map-by ppr:2:node:pe=2 --bind-to core" in lines
    assert "environment: OMP_NUM_THREADS=2 OMP_PLACES=cores OMP_PROC_BIND=close HYMPI_BIND=none" in lines
    assert lines[-1].split() == ["1", "3", "1", "6-7"]  # node 1, rank 3, thread 1: core 3


@pytest.mark.parametrize(("args", "needle"), [
    (["--ranks-per-node", "4", "--threads", "9", "--for", "mpich"], "36 exceeds the 32 cores"),
    (["--for", "lam"], "unknown launcher 'lam'"),
    (["--bind", "hwthread", "--for", "slurm"], "unknown binding 'hwthread'"),
    (["--dist", "spread", "--for", "slurm"], "unknown distribution 'spread'"),
    (["--ranks-per-node", "0", "--for", "slurm"], "--ranks-per-node must be >= 1"),
    (["--ranks-per-node", "6", "--dist", "scatter", "--for", "openmpi4"], "not a multiple"),
    (["--rankfile", "/nonexistent/ranks", "--for", "openmpi4"], "cannot read rankfile"),
    (["--topology", "synthetic:bogus:3", "--for", "openmpi4"], "invalid synthetic topology")])
def test_layout_cli_refuses_bad_input_in_one_line(args, needle, capsys):
    code, out, err = layout_cli(capsys, *args)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hympi: error: ") and needle in lines[0], err


def test_docs_table_is_generated_by_hympi_layout():
    spec = importlib.util.spec_from_file_location("launchers_doc", REPO / "scripts" / "launchers_doc.py")
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    text = generator.render()
    assert "| openmpi4 | `mpirun -np 8 --map-by ppr:4:node:PE=4 --bind-to core` |" in text
    assert (REPO / "docs" / "launchers.md").read_text() == text, "docs/launchers.md is stale: run " \
        "python scripts/launchers_doc.py"


_MPIRUN_TARGET = probe(shutil.which("mpirun") or "")[0] if skips.have_mpirun() else None
needs_openmpi4 = skips.needs(skips.Reason.OPEN_MPI, _MPIRUN_TARGET is not None and _MPIRUN_TARGET.target == "openmpi4",
                             "needs Open MPI 4's mpirun (Debian 12's)")


@needs_openmpi4
def test_launcher_binding_passes_the_affinity_check():
    proc = hympi("affinity", "-n", "2", "--check", "--binder", "launcher", "--launcher", "openmpi4")
    assert proc.returncode == 0, proc.stderr
    assert "layout check (launcher binds): PASSED" in proc.stderr


@needs_openmpi4
def test_launcher_that_ignores_the_binding_fails_the_affinity_check(tmp_path):
    # A site wrapper that turns --bind-to core into --bind-to none: both ranks may then run anywhere.
    wrapper = tmp_path / "mpirun"
    wrapper.write_text('#!/bin/bash\nargs=()\nfor a in "$@"; do [ "$a" = core ] && a=none; args+=("$a"); done\n'
                       f'exec {shutil.which("mpirun")} "${{args[@]}}"\n')
    wrapper.chmod(0o755)
    proc = hympi("affinity", "-n", "2", "--check", "--binder", "launcher", env={"HYMPI_MPIRUN": str(wrapper)})
    assert proc.returncode == 1
    # With nothing bound, OpenMP puts each rank's one thread on the first core it may use: both on core 0.
    assert "layout mismatch: rank 1 thread 0: intended 1, bound to 0, ran on PU 0" in proc.stderr
    assert "layout check (launcher binds): FAILED" in proc.stderr


@needs_openmpi4
def test_mismatches_name_the_thread_and_both_sets():
    spec = LaunchSpec("hympi-affinity", 1, 2, binder="launcher")
    cmd = build_command(spec, shutil.which("mpirun"), "openmpi")
    assert cmd[cmd.index("--map-by") + 1] == "ppr:1:node:PE=2" and "HYMPI_BIND=none" in cmd
    outcome = run_command(cmd, 60)
    assert outcome.result is not None, outcome.stderr
    rows = list(outcome.result.binding)
    this = load_node_tree("this")
    assert layout_mismatches(LayoutSpec(1, 1, 2).placements(this), rows) == []
    # Read against a layout it was not launched with (thread 1 meant for thread 0's core), it must fail.
    wrong = layout_mismatches(LayoutSpec(1, 2, 1).placements(this), rows)
    assert "rank 0 thread 1: not in the layout" in wrong[0] and "rank 1 thread 0" in wrong[-1]


def test_hympi_binder_keeps_todays_command():
    cmd = build_command(LaunchSpec("hympi-rb3d", 2, 1), "mpirun", "openmpi")
    assert cmd[cmd.index("-np"):cmd.index("-np") + 5] == ["-np", "2", "--bind-to", "none", "--oversubscribe"]
    assert "HYMPI_BIND=core" in cmd and not any(a.startswith("OMP_PLACES") for a in cmd)




def test_a_sweep_with_a_launcher_not_installed_writes_nothing(tmp_path):
    # mpirun here is Open MPI 4: asking for Open MPI 5 is an environment error, found before the database exists.
    db = tmp_path / "r.db"
    proc = hympi("sweep", "rb3d", "--ranks", "1", "--launcher", "openmpi5", "--db", str(db))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.count("\n") == 1 and "openmpi5" in proc.stderr
    assert not db.exists()
