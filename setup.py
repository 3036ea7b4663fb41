"""setuptools hooks pyproject.toml cannot declare: the CMake tree's install record goes into a built package, and
setuptools builds beside the CMake tree's build/lib, not into it."""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# The repository's Release tree (the Makefile's BUILD), written by cmake/HympiInstall.cmake at configure time.
CMAKE_RECORD = ROOT / "build" / "hympi-install.toml"


class BuildPyWithInstallRecord(build_py):
    """build_py that also copies build/hympi-install.toml into the package as install.toml, when it exists."""

    def run(self) -> None:
        """Builds the package; fails only as build_py does (an unreadable record raises OSError)."""
        # build_py never removes what an earlier build left (a deleted module, a record since removed).
        shutil.rmtree(self.build_lib, ignore_errors=True)
        super().run()
        # An editable install (setuptools >= 64 sets editable_mode) runs from the repository and uses its build/bin:
        # it gets no record, and its temporary build_lib holds no package folder to copy into.
        if CMAKE_RECORD.is_file() and not getattr(self, "editable_mode", False):
            shutil.copyfile(CMAKE_RECORD, Path(self.build_lib) / "hympi" / "install.toml")


# build/lib is CMake's library directory (libhympi-profile.so); setuptools' default build_base would write there.
setup(cmdclass={"build_py": BuildPyWithInstallRecord}, options={"build": {"build_base": "build/python"}})
