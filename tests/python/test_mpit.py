"""MPI_T control variables: `hympi-mpit --json` lists them, and every app reads back what HYMPI_MPIT_READ names."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import skips
from conftest import REPO
from hympi.result import parse_result

BIN = Path(os.environ.get("HYMPI_BIN_DIR") or REPO / "build" / "bin")
MPIRUN = ["mpirun", "--oversubscribe", "--bind-to", "none", "-np", "2"]
DATATYPES = {"int", "unsigned", "long", "unsigned_long", "long_long", "unsigned_long_long", "double", "bool",
             "string", "other"}
FIELDS = {"name", "datatype", "count", "value", "enum", "scope", "verbosity", "bind", "description"}


def _binary(name: str) -> Path:
    return skips.require_binary(BIN / name)


def _env(**extra: str) -> dict[str, str]:
    return {**{k: v for k, v in os.environ.items() if not k.startswith(("HYMPI_", "OMPI_MCA_btl_vader"))},
            "OMP_NUM_THREADS": "1", "HYMPI_MIN_TIME": "0", **extra}


def test_mpit_json_lists_every_cvar_once_with_the_declared_fields():
    proc = subprocess.run([*MPIRUN, str(_binary("hympi-mpit")), "--json"], capture_output=True, text=True,
                          timeout=120, env=_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    listing = json.loads(proc.stdout)
    assert listing["format"] == "hympi-mpit" and listing["mpi_library"]
    cvars = listing["cvars"]
    assert cvars and len({c["name"] for c in cvars}) == len(cvars)
    for c in cvars:
        assert set(c) == FIELDS, c["name"]
        assert c["datatype"] in DATATYPES and isinstance(c["count"], int), c
        assert c["value"] is None or isinstance(c["value"], str), c
        assert isinstance(c["enum"], list) and all(isinstance(item, str) for item in c["enum"]), c
    if listing["mpi_library"].startswith("Open MPI"):  # 2 ranks: the shared-memory component is open
        vader = {c["name"]: c for c in cvars}["btl_vader_single_copy_mechanism"]
        assert "none" in vader["enum"] and vader["value"] in vader["enum"]


def test_mpit_rejects_an_unknown_flag_in_one_line():
    proc = subprocess.run([str(_binary("hympi-mpit")), "--bogus"], capture_output=True, text=True, timeout=60,
                          env=_env(), check=False)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().startswith("hympi-mpit: error:") and "--bogus" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_an_app_reports_the_cvars_it_read_back_after_mpi_init():
    env = _env(HYMPI_MPIT_READ="btl_vader_eager_limit,no_such_cvar", OMPI_MCA_btl_vader_eager_limit="8192")
    proc = subprocess.run([*MPIRUN, "-x", "OMPI_MCA_btl_vader_eager_limit", str(_binary("hympi-rb3d")),
                           "--size", "8"], capture_output=True, text=True, timeout=120, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    record = parse_result(proc.stdout)
    assert record is not None
    if not record.mpi_library.startswith("Open MPI"):
        skips.skip(skips.Reason.OPEN_MPI, f"Open MPI's MCA variables, the app was built with {record.mpi_library}")
    assert record.mpi_cvars == {"btl_vader_eager_limit": "8192", "no_such_cvar": None}


def test_an_empty_cvar_name_is_bad_input():
    proc = subprocess.run([str(_binary("hympi-rb3d")), "--size", "8"], capture_output=True, text=True, timeout=60,
                          env=_env(HYMPI_MPIT_READ="btl_vader_eager_limit,,x"), check=False)
    assert proc.returncode == 2 and "HYMPI_MPIT_READ: empty cvar name" in proc.stderr
