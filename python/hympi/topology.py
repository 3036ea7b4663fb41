"""The machine's topology, as hwloc reports it through hympi-info."""

from __future__ import annotations

import json
import math
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from hympi.errors import HympiFatal, UsageError
from hympi.jsontypes import JsonObject
from hympi.limits import MAX_NODE_PUS
from hympi.paths import binary


@dataclass(frozen=True)
class MachineSummary:
    """Counts of one machine's hierarchy levels plus its caches."""

    packages: int
    numa_nodes: int
    cores: int
    pus: int
    caches: tuple[tuple[int, int, int], ...]  # (level, size_bytes, count)
    hash: str
    raw: str  # the JSON hympi-info printed

    def as_dict(self) -> JsonObject:
        """The summary as hympi-info printed it."""
        data: JsonObject = json.loads(self.raw)  # an object: machine_summary read its fields
        return data


SYNTHETIC = "synthetic:"
# How long hympi-info may take to load a topology (hwloc's discovery of this machine, an XML file, a synthetic one
# within MAX_NODE_PUS): seconds on the largest, so only a hung hympi-info reaches it.
INFO_TIMEOUT_S = 60.0
# One level of an hwloc synthetic description: its type (optional in hwloc's syntax) and arity, e.g. 'core:4'.
_SYNTHETIC_LEVEL = re.compile(r"(?:[A-Za-z]\w*:)?(\d+)")


def synthetic_pus(description: str) -> int:
    """The PUs of an hwloc synthetic description (after 'synthetic:'): the product of its levels' arities
    ('pack:2 core:4 pu:2' -> 16). Attributes '(...)' and attached memory '[...]' add no PU; a token that is no
    level is left for hwloc to refuse."""
    levels = re.sub(r"\([^)]*\)|\[[^\]]*\]", " ", description).split()
    return math.prod(int(m[1]) for m in map(_SYNTHETIC_LEVEL.fullmatch, levels) if m is not None)


def run_hympi_info(spec: str, output: str) -> str:
    """stdout of `hympi-info --<output> --topology SPEC` ('json' or 'xml'); bad specs raise UsageError (a synthetic
    one with more than MAX_NODE_PUS PUs before hwloc builds it), a hympi-info that hangs HympiFatal."""
    if spec.startswith(SYNTHETIC):
        why = MAX_NODE_PUS.exceeded(synthetic_pus(spec.removeprefix(SYNTHETIC)))
        if why is not None:
            raise UsageError(f"topology '{spec}': {why}")
    cmd = [str(binary("hympi-info")), f"--{output}", "--topology", spec]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=INFO_TIMEOUT_S,
                              check=False)
    except subprocess.TimeoutExpired:
        raise HympiFatal(f"hympi-info did not load topology '{spec}' within {INFO_TIMEOUT_S:g} s") from None
    if proc.returncode == 2:
        raise UsageError(proc.stderr.strip().removeprefix("hympi-info: error: "))
    if proc.returncode != 0:
        raise HympiFatal(f"hympi-info failed: {proc.stderr.strip()}")
    return proc.stdout


def summary_from_json(data: JsonObject) -> MachineSummary:
    """The summary hympi-info printed as JSON, as a record; KeyError or TypeError for a missing or mistyped field."""
    caches = tuple((int(c["level"]), int(c["size_bytes"]), int(c["count"])) for c in data["caches"])
    return MachineSummary(int(data["packages"]), int(data["numa_nodes"]), int(data["cores"]), int(data["pus"]),
                          caches, str(data["hash"]), json.dumps(data))


@lru_cache(maxsize=8)
def machine_summary(spec: str = "this") -> MachineSummary:
    """Topology summary of `spec` ('this', 'synthetic:...', or an hwloc XML path); UsageError for a bad spec."""
    return summary_from_json(json.loads(run_hympi_info(spec, "json")))
