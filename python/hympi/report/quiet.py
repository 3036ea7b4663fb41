"""How quiet the machine was over the runs a report covers (hympi.busy's measurements per run)."""

from __future__ import annotations

import statistics

from hympi.store import WARMUP_REPEAT, Run


def quiet_sentence(runs: list[Run]) -> str:
    """'The machine was quiet: 0 of 72 measured runs overlapped other work (median 0.02 cores beside a run)', or
    with the disturbed share when some did; "" when no run was measured for other work (recorded before hympi
    measured it)."""
    measured = [r for r in runs if r.repeat != WARMUP_REPEAT and r.interference is not None]
    if not measured:
        return ""
    hit = sum(1 for r in measured if r.disturbed)
    loads = [r.interference.outside_cores for r in measured if r.interference is not None]
    load = f"median {statistics.median(loads):.2f} cores of other work beside a run"
    if not hit:
        return f"The machine was quiet: none of {len(measured)} measured runs overlapped other work ({load})."
    share = 100.0 * hit / len(measured)
    return (f"The machine was busy: {hit} of {len(measured)} measured runs ({share:.0f} %) overlapped other work "
            f"above the threshold and are left out of the verdicts ({load}).")
