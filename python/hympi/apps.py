"""The reference applications hympi knows how to launch."""

from __future__ import annotations

from dataclasses import dataclass

from hympi.errors import UsageError


@dataclass(frozen=True)
class AppSpec:
    """One app: its CLI name, binary and what it does."""

    name: str
    binary: str
    description: str


APPS: dict[str, AppSpec] = {
    spec.name: spec
    for spec in (
        AppSpec("affinity", "hympi-affinity", "binding of every rank and thread"),
        AppSpec("stream", "hympi-stream", "STREAM memory bandwidth (the roofline bound)"),
        AppSpec("rb3d", "hympi-rb3d", "3D Poisson, red-black Gauss-Seidel"),
        AppSpec("spmv3d", "hympi-spmv3d", "27-point SpMV and CG on a 3D grid"),
        AppSpec("bt-mz", "hympi-bt-mz", "NPB BT-MZ (block tridiagonal, multi-zone)"),
        AppSpec("sp-mz", "hympi-sp-mz", "NPB SP-MZ (scalar pentadiagonal, multi-zone)"),
        AppSpec("lu-mz", "hympi-lu-mz", "NPB LU-MZ (SSOR, multi-zone)"),
        AppSpec("pingpong", "hympi-pingpong", "ping-pong latency/bandwidth per hierarchy level"),
    )
}


def get_app(name: str) -> AppSpec:
    """The app called `name`; raises UsageError listing the known ones otherwise."""
    try:
        return APPS[name]
    except KeyError:
        raise UsageError(f"unknown app '{name}' (known: {', '.join(sorted(APPS))})") from None
