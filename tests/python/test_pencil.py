"""hympi-pencil's user errors (issue 16): one line naming the value, exit 2, nothing launched."""

from __future__ import annotations

import pytest

from conftest import hympi, hympi_json


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ranks", "1", "--", "--grid", "16", "16", "15"], "got 15"),
        (["--ranks", "1", "--", "--grid", "16", "16", "12"], "nz = 12"),
        (["--ranks", "8", "--oversubscribe", "--", "--grid", "6", "8", "16"], "8 ranks"),
        (["--ranks", "2", "--", "--groups", "1:1:1"], "'1:1:1'"),
        (["--ranks", "2", "--", "--groups", "0:2"], "'0:2'"),
        (["--ranks", "2", "--", "--groups", "x:y"], "'x:y'"),
        (["--ranks", "2", "--", "--groups", "2:2"], "2:2"),
        (["--ranks", "2", "--", "--groups", "1:1", "--verify", "order"], "--verify order"),
        (["--ranks", "1", "--", "--exchange", "bogus"], "'bogus'"),
        (["--ranks", "1", "--", "--wire", "half"], "'half'"),
        (["--ranks", "1", "--", "--tile", "0x3"], "'0x3'"),
    ],
)
def test_bad_input_exits_2_with_one_line(args, needle, fake_launcher):
    env, marker = fake_launcher
    proc = hympi("run", "pencil", *args, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert needle in lines[0]
    assert not marker.exists()


@pytest.mark.parametrize("ranks", [1, 2])
def test_record_splits_the_transposes_into_their_steps(ranks: int) -> None:
    """metrics.transpose_steps (bench/pencil/weak.py's second table): six transposes a step (three RK3 substeps,
    there and back), what a rank sends to the others (nothing on one rank), and steps that add up to at least the
    transposes' time (each step's max over ranks, against the max of their sum)."""
    code, rec = hympi_json("run", "pencil", "--ranks", str(ranks), "--oversubscribe", "--json", "--",
                           "--grid", str(16 * ranks), "16", "16", "--steps", "5", "--min-time", "0")
    assert code == 0, rec
    metrics = rec["metrics"]
    steps = metrics["transpose_steps"]
    assert steps["count"] == 6 * metrics["timed_steps"] == 30
    # 16 x planes per rank, 16 y, 12 doubles of z (6 modes kept of 16 points): half the lines go to the other rank.
    assert steps["bytes_sent"] == (0 if ranks == 1 else 30 * 16 * 16 * 12 * 8 // 2)
    assert steps["pack_s"] > 0 and steps["unpack_s"] > 0 and steps["exchange_s"] >= 0
    assert steps["pack_s"] + steps["exchange_s"] + steps["unpack_s"] >= metrics["transpose_s"] * (1 - 1e-9)
