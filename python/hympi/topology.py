"""The machine's topology, as hwloc reports it through hympi-info."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from hympi.errors import HympiFatal, UsageError
from hympi.jsontypes import JsonObject
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


# How long hympi-info may take to load a topology (hwloc's discovery of this machine, an XML file, a synthetic one
# within the PUs a node may have): seconds on the largest, so only a hung hympi-info reaches it.
INFO_TIMEOUT_S = 60.0


def run_hympi_info(spec: str, output: str) -> str:
    """stdout of `hympi-info --<output> --topology SPEC` ('json' or 'xml'); bad specs raise UsageError in
    hympi-info's words (a synthetic one with more PUs than a node may have is refused before hwloc builds it:
    Topology::from_synthetic counts them), a hympi-info that hangs HympiFatal."""
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
