"""`pip install .` away from the repository: the installed CLI reads its own copy of contract.toml and runs the apps
`cmake --install` put under a prefix, found through HYMPI_BIN_DIR > HYMPI_PREFIX > the install prefix recorded at
build time (issue 20, part 4). A venv without pip whose dependencies are this interpreter's (a .pth line), and the
package built offline without build isolation, keep it near ten seconds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BUILD = REPO / "build"


def _run(args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=300, env=env, cwd=cwd, check=False)


def _ok(args: list[str], cwd: Path | None = None) -> str:
    proc = _run(args, cwd=cwd)
    assert proc.returncode == 0, f"{' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_pip_installed_cli_runs_the_installed_apps(tmp_path: Path) -> None:
    prefix = tmp_path / "prefix"
    _ok(["cmake", "--install", str(BUILD), "--prefix", str(prefix)])
    venv = tmp_path / "venv"
    _ok([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_ok([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).strip())
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _ok([sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", str(REPO)])

    # The package is the venv's copy, contract.toml a file of its own, and the build tree's install record inside.
    package = site / "hympi"
    where = _ok([str(python), "-c", "import hympi.contract as c; print(c.CONTRACT_PATH)"], cwd=tmp_path).strip()
    assert Path(where) == package / "contract.toml" and not Path(where).is_symlink()
    assert (package / "contract.toml").read_text() == (REPO / "contract.toml").read_text()
    assert (package / "install.toml").read_text() == (BUILD / "hympi-install.toml").read_text()

    # Nothing of the repository's: no HYMPI_* variables, no PYTHONPATH, no build/bin on PATH, run from elsewhere.
    base = {k: v for k, v in os.environ.items() if not k.startswith("HYMPI_") and k != "PYTHONPATH"}
    base["PATH"] = os.pathsep.join(p for p in base.get("PATH", "").split(os.pathsep) if Path(p) != BUILD / "bin")
    hympi = str(venv / "bin" / "hympi")

    def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return _run([hympi, *args], env={**base, **env}, cwd=tmp_path)

    info = cli("info", "--json", HYMPI_PREFIX=str(prefix))
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["pus"] >= 1
    run = cli("run", "stream", "--ranks", "1", "--threads", "1", "--json", "--", "--elements", "100000",
              "--min-time", "0", HYMPI_PREFIX=str(prefix), OMP_WAIT_POLICY="passive")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["verified"] is True

    # The order: HYMPI_BIN_DIR before HYMPI_PREFIX before the recorded prefix; each names where it looked.
    empty = tmp_path / "empty"
    wrong = cli("info", HYMPI_BIN_DIR=str(empty / "bin"), HYMPI_PREFIX=str(prefix))
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"hympi: error: hympi-info not found in {empty / 'bin'} (HYMPI_BIN_DIR)")
    (package / "install.toml").write_text(f'prefix = "{prefix}"\nbindir = "bin"\nlibdir = "lib"\n')
    recorded = cli("info", "--json")
    assert recorded.returncode == 0, recorded.stderr
    wrong = cli("info", HYMPI_PREFIX=str(empty))
    assert wrong.returncode == 1
    assert wrong.stderr.startswith(f"hympi: error: hympi-info not found in {empty / 'bin'} (HYMPI_PREFIX)")
