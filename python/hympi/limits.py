"""The largest sizes hympi accepts, each declared once with the reason for its value.

A size beyond its limit is bad input (one line, exit 2), refused while the command line is parsed: before a
layout is enumerated, an array allocated, hwloc asked to build a topology or a file named.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from hympi.contract import contract
from hympi.errors import UsageError


@dataclass(frozen=True)
class Limit:
    """The largest accepted value of one kind of size (`unit`), and why it is that value."""

    value: int
    unit: str
    reason: str

    def exceeded(self, given: int) -> str | None:
        """Why `given` is refused ('N exceeds hympi's limit of ... (reason)'), or None when it is within the limit."""
        if given <= self.value:
            return None
        return f"{given} exceeds hympi's limit of {self.value} {self.unit} ({self.reason})"

    def check(self, name: str, given: int) -> int:
        """`given`, or UsageError naming `name`, the value, the limit and its reason when it is larger."""
        why = self.exceeded(given)
        if why is not None:
            raise UsageError(f"{name} {why}")
        return given


# Fugaku has 158,976 nodes, the most of any machine so far: 2^20 refuses no real cluster, and a typo of a few
# extra digits (which `place` would allocate per node and `layout` enumerate) is caught.
MAX_NODES = Limit(value=1 << 20, unit="nodes",
                  reason="more nodes than any machine has: Fugaku, the largest, has 158,976")

# Every thread of a job is one cpuset `hympi layout` computes and prints, and a rank is at least one thread:
# 2^23 is above Fugaku's 7,630,848 cores, the largest job that can run one thread per core.
MAX_JOB_THREADS = Limit(value=1 << 23, unit="ranks x threads in one job",
                        reason="more than the 7,630,848 cores of Fugaku, the largest machine")

# PUs of one node: of a topology hwloc is asked to build, and ranks x threads hympi places on one node (declared in
# contract.toml [node_pus], where hympi-info reads it too).
MAX_NODE_PUS = Limit(value=contract().max_node_pus, unit="PUs (or ranks x threads) on one node",
                     reason=contract().max_node_pus_reason)

# Measured runs per layout (--repeat, --max-repeat) and configurations of a tune (--max-runs): a plan lists every run
# before the first starts, so 10^20 of them never start at all; ten thousand a side already resolve differences far
# below what any machine holds steady.
MAX_RUN_COUNT = Limit(value=10_000, unit="runs", reason="enough to resolve a difference of a fraction of a per cent")

# A communication matrix's total volume (bytes, or any weight): placement sums volume x distance in floating point,
# so totals near 1.8e308 overflowed to inf and every share turned NaN. 10^30 is over 10^4 times an exabyte a second
# sent for a year.
MAX_MATRIX_VOLUME = 1e30

# A sweep's, study's or tune's id: a row id of the results database, which SQLite stores as a signed 64-bit integer.
MAX_ROW_ID = Limit(value=2**63 - 1, unit="for an id", reason="SQLite's largest integer")

# Linux's PATH_MAX (4096 bytes with the terminating NUL) and NAME_MAX (255 bytes per component): a longer path
# fails in every system call with ENAMETOOLONG, so it is refused as given, before any file is looked at.
MAX_PATH_BYTES = Limit(value=4095, unit="bytes in a path", reason="Linux's PATH_MAX")
MAX_NAME_BYTES = Limit(value=255, unit="bytes in one path component", reason="Linux's NAME_MAX")


def count_argument(limit: Limit) -> Callable[[str], int]:
    """argparse type of a count option (--nodes, --threads, ...): an integer no larger than `limit`, refused while
    the command line is parsed (the lower bound, >= 1, is the command's own check)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        why = limit.exceeded(value)
        if why is not None:
            raise argparse.ArgumentTypeError(why)  # argparse names the option
        return value
    return parse


def check_path(option: str, path: str) -> str:
    """`path`, or UsageError naming `option` when it is empty (no file has that name: an empty value would otherwise
    read as the option not given) or it or one of its components is longer than Linux allows (the path itself is not
    repeated: it is what is too long)."""
    if not path:
        raise UsageError(f"{option}: an empty path names no file")
    encoded = path.encode("utf-8", "surrogateescape")
    if len(encoded) > MAX_PATH_BYTES.value:
        raise UsageError(f"{option}: a path of {len(encoded)} bytes exceeds {MAX_PATH_BYTES.value} "
                         f"{MAX_PATH_BYTES.unit} ({MAX_PATH_BYTES.reason})")
    longest = max(encoded.split(b"/"), key=len)
    if len(longest) > MAX_NAME_BYTES.value:
        raise UsageError(f"{option}: a path component of {len(longest)} bytes ('{longest[:20].decode(errors='replace')}"
                         f"...') exceeds {MAX_NAME_BYTES.value} {MAX_NAME_BYTES.unit} ({MAX_NAME_BYTES.reason})")
    return path
