"""Issue 30 B.4: HYMPI_MPI_FLAVOR (or mpi_flavor in the config file) must name one of the declared flavours
(hympi.launch.mpirun.MPI_FLAVORS); anything else is one line naming the variable and the value, exit 2, nothing
launched, written or turned into a traceback (with --mpi-param it used to be a ValueError)."""

from __future__ import annotations

import pytest

from conftest import hympi
from fakeapps import fake_bin_dir, launches
from hympi.errors import UsageError
from hympi.launch.mpirun import MPI_FLAVORS, configured_flavor, mpi_flavor
from refusals import assert_refused, files

GARBAGE = ("garbage", "OpenMPI", "mpich2", "openmpi ", "intel")


@pytest.mark.parametrize("flavor", MPI_FLAVORS)
def test_each_declared_flavour_is_taken_as_given(flavor, monkeypatch):
    monkeypatch.setenv("HYMPI_MPI_FLAVOR", flavor)
    assert configured_flavor() == flavor
    assert mpi_flavor("/nonexistent/launcher-" + flavor) == flavor  # never asks the launcher


def test_unset_flavour_leaves_it_to_the_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv("HYMPI_MPI_FLAVOR", raising=False)
    monkeypatch.delenv("HYMPI_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./hympi.toml
    assert configured_flavor() is None


@pytest.mark.parametrize("flavor", GARBAGE)
def test_garbage_flavour_is_refused_naming_the_variable(flavor, monkeypatch):
    monkeypatch.setenv("HYMPI_MPI_FLAVOR", flavor)
    with pytest.raises(UsageError, match=rf"^HYMPI_MPI_FLAVOR: unknown MPI flavour '{flavor}' \(expected openmpi "
                                         r"or mpich\)$"):
        configured_flavor()
    with pytest.raises(UsageError):
        mpi_flavor("/nonexistent/launcher-" + flavor)


def test_garbage_in_the_config_file_names_the_file_and_key(tmp_path, monkeypatch):
    config = tmp_path / "hympi.toml"
    config.write_text('mpi_flavor = "mvapich"\n')
    monkeypatch.delenv("HYMPI_MPI_FLAVOR", raising=False)
    monkeypatch.setenv("HYMPI_CONFIG", str(config))
    with pytest.raises(UsageError, match=rf"^{config}: mpi_flavor: unknown MPI flavour 'mvapich'"):
        configured_flavor()


@pytest.mark.parametrize("command", [
    ["run", "rb3d"],
    ["run", "rb3d", "--mpi-param", "btl=self"],  # the traceback of the issue
    ["affinity"],
    ["sweep", "rb3d", "--dry-run"],
    ["sweep", "rb3d", "--mpi-param", "btl=self"],
    ["info"],
])
def test_commands_refuse_a_garbage_flavour_before_anything_happens(command, tmp_path):
    env = {**fake_bin_dir(tmp_path), "HYMPI_MPI_FLAVOR": "garbage"}
    work = tmp_path / "work"
    work.mkdir()
    proc = hympi(*command, "--db", str(work / "r.db"), env=env) if command[0] == "sweep" else hympi(*command, env=env)
    assert_refused(proc, "HYMPI_MPI_FLAVOR", "'garbage'")
    assert launches(env) == []
    assert files(work) == []


def test_a_declared_flavour_still_runs(tmp_path):
    env = {**fake_bin_dir(tmp_path), "HYMPI_MPI_FLAVOR": "openmpi"}
    proc = hympi("run", "rb3d", env=env)
    assert proc.returncode == 0, proc.stderr
    assert len(launches(env)) == 1
