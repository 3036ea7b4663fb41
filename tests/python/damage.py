"""Damaged copies of an rb3d checkpoint, the one way tests make them: the app's own check (test_checkpoint.py) and
hympi's check before launch (test_validation.py) must refuse the same damage."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

import skips

h5py = skips.import_or_skip("h5py", skips.Reason.H5PY)

DAMAGES = ("none", "empty", "truncated", "not-hdf5", "other-app", "flipped-bit", "state-digit", "no-header-checksum",
           "object-header")

# (damage, restart arguments besides the file, words of the one error line) for a checkpoint of a 20^3 rb3d run at
# iteration 20: what both checks must refuse, and how they word it.
BAD_CHECKPOINTS = [
    ("empty", [], "not HDF5"),
    ("truncated", [], "truncated"),
    ("not-hdf5", [], "not HDF5"),
    # App and size are named before the checksum: another app's real checkpoint is named as such.
    ("other-app", [], "checkpoint of spmv3d, not of rb3d"),
    ("none", ["--size", "16"], "this run's is"),
    ("none", ["--iterations", "10"], "beyond the 10"),
    ("flipped-bit", [], "fails its checksum"),
    ("state-digit", [], "header fails its checksum"),
    ("no-header-checksum", [], "no header checksum"),
    # HDF5 1.10 refuses it ("actual len exceeds EOA") but keeps objects of it it cannot free, and printed two lines
    # of noise at exit ("HDF5: infinite loop closing library") after the app's own.
    ("object-header", [], "not HDF5"),
]


def restart_args(bad: Path, args: list[str]) -> list[str]:
    """rb3d's arguments for restarting from `bad` (20^3 to iteration 40 unless `args` says otherwise)."""
    given = dict(zip(args[::2], args[1::2], strict=True))
    return ["--size", given.get("--size", "20"), "--residual-every", "5", "--iterations",
            given.get("--iterations", "40"), "--restart", str(bad)]



def flip_state_digit(path: Path) -> None:
    """Changes one digit of the residual history the header holds, keeping its length (a plausible edit)."""
    with h5py.File(path, "r+") as f:
        state = bytes(f.attrs["state"]).rstrip(b"\0").decode()
        at = next(i for i, c in enumerate(state) if c.isdigit() and i > state.index("residuals") + 12)
        digit = str((int(state[at]) + 1) % 10)
        f.attrs["state"] = np.bytes_((state[:at] + digit + state[at + 1 :]).encode())


def flip_field_bit(path: Path) -> None:
    """Flips the lowest bit of one byte inside the field `u`, behind HDF5's back (a silent disk error)."""
    with h5py.File(path, "r") as f:
        offset = f["u"].id.get_offset() + 8 * 1234 + 5
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0x01]))


def damaged(source: Path, target: Path, damage: str) -> Path:
    """A copy of checkpoint `source` at `target` with `damage` (one of DAMAGES) done to it."""
    if damage not in DAMAGES:
        raise ValueError(f"unknown damage {damage!r}")
    shutil.copy(source, target)
    if damage == "empty":
        target.write_bytes(b"")
    elif damage == "truncated":
        with open(target, "r+b") as f:
            f.truncate(target.stat().st_size // 2)
    elif damage == "not-hdf5":
        target.write_text("not a checkpoint\n")
    elif damage == "other-app":
        with h5py.File(target, "r+") as f:
            f.attrs["app"] = np.bytes_(b"spmv3d")
    elif damage == "flipped-bit":
        flip_field_bit(target)
    elif damage == "state-digit":
        flip_state_digit(target)
    elif damage == "object-header":
        with open(target, "r+b") as f:  # 16 bytes of the root group's object header, after the superblock
            f.seek(100)
            head = f.read(16)
            f.seek(100)
            f.write(bytes(b ^ 0xFF for b in head))
    elif damage == "no-header-checksum":
        with h5py.File(target, "r+") as f:
            del f.attrs["header_checksum"]
    return target
