"""Where the compiled apps and the profiling library live, and whether a command's subject is one of those apps or a
program of the user's own, named by its path.

The first of these that is set wins: HYMPI_BIN_DIR, HYMPI_PREFIX (PREFIX/bin), the install prefix the CMake build
tree recorded when this package was built from it with `pip install .` (install.toml inside the package), the
repository's build/bin; a binary missing from that directory is then looked up on PATH.
"""

from __future__ import annotations

import os
import shutil
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hympi.errors import HympiFatal, UsageError
from hympi.settings import settings
from hympi.textfile import file_problem


def program_named(text: str) -> bool:
    """Whether the subject `text` of a command names a program by its path (it contains '/') rather than an app."""
    return "/" in text


# python/hympi/paths.py -> repository root is three levels up.
REPO_ROOT = Path(__file__).resolve().parents[2]
# Written by setup.py from the CMake tree's build/hympi-install.toml into a built (non-editable) package only: an
# editable install runs from the repository, whose own build/bin it should use.
INSTALL_RECORD = Path(__file__).resolve().parent / "install.toml"


@dataclass(frozen=True)
class InstallRecord:
    """The install layout a CMake build tree was configured with: CMAKE_INSTALL_PREFIX and GNUInstallDirs' dirs."""

    prefix: Path
    bindir: str
    libdir: str


@dataclass(frozen=True)
class AppDirs:
    """The directories of the hympi-* binaries and of libhympi-profile.so, and the rule that chose them."""

    bin: Path
    lib: Path
    origin: str


@lru_cache(maxsize=1)
def install_record(path: Path = INSTALL_RECORD) -> InstallRecord | None:
    """The recorded install layout, None without one; HympiFatal naming the file when it is malformed."""
    if not path.is_file():
        return None
    try:
        table = tomllib.loads(path.read_text())
        return InstallRecord(Path(table["prefix"]), str(table["bindir"]), str(table["libdir"]))
    except (OSError, ValueError, KeyError) as err:  # ValueError: TOMLDecodeError and UnicodeDecodeError
        raise HympiFatal(f"install record {path} is unreadable ({err}); reinstall the hympi package") from None


def app_dirs() -> AppDirs:
    """Where the apps are (see the module docstring); HympiFatal only for a malformed install record."""
    options = settings()
    explicit = options.text("bin_dir")
    if explicit:
        return AppDirs(Path(explicit), Path(explicit).parent / "lib", options.get("bin_dir").name)
    record = install_record()
    prefix = options.text("prefix")
    if prefix:
        # The same layout below any prefix as the recorded one (lib/x86_64-linux-gnu under /usr, say), else bin, lib.
        libdir = record.libdir if record else "lib"
        return AppDirs(Path(prefix) / "bin", Path(prefix) / libdir, options.get("prefix").name)
    if record is not None:
        where = record.prefix
        return AppDirs(where / record.bindir, where / record.libdir, f"the install prefix {where} recorded at build")
    return AppDirs(REPO_ROOT / "build" / "bin", REPO_ROOT / "build" / "lib", "the repository's build")


def bin_dir() -> Path:
    """Directory of the hympi-* binaries (see app_dirs); HympiFatal only for a malformed install record."""
    return app_dirs().bin


def _is_file(path: Path, dirs: AppDirs) -> bool:
    """Whether `path` is a file (or a link to one); UsageError naming what chose `dirs` (HYMPI_BIN_DIR, say) when the
    system cannot look the name up, a name too long or a directory without search permission, for which
    Path.is_file raises instead of answering."""
    try:
        return path.is_file()
    except OSError as exc:
        raise UsageError(f"{dirs.origin}: {path.parent} cannot be examined ({exc.strerror or exc})") from None


def binary(name: str) -> Path:
    """Full path of binary `name` (e.g. 'hympi-rb3d'); raises HympiFatal if it was not built."""
    dirs = app_dirs()
    candidate = dirs.bin / name
    if _is_file(candidate, dirs) and os.access(candidate, os.X_OK):
        return candidate
    found = shutil.which(name)
    if found:
        return Path(found)
    raise HympiFatal(
        f"{name} not found in {dirs.bin} ({dirs.origin}) or on PATH "
        "(run 'make', or 'cmake --install' and set HYMPI_PREFIX)"
    )


def profile_library() -> Path:
    """libhympi-profile.so: $HYMPI_PROFILE_LIB (or the config file's profile_lib), else in the lib directory beside
    the apps'. A named one that is missing or not a file is bad input (UsageError naming where it came from); the
    built one missing is an incomplete build (HympiFatal)."""
    setting = settings().get("profile_lib")
    if setting.value:
        path = Path(str(setting.value))
        problem = file_problem(path)
        if problem is not None:
            raise UsageError(f"{setting.name}: profiling library {path} {problem}")
        return path
    dirs = app_dirs()
    path = dirs.lib / "libhympi-profile.so"
    if not _is_file(path, dirs):
        raise HympiFatal(f"profiling library {path} not found (run 'make' first, or set HYMPI_PROFILE_LIB)")
    return path
