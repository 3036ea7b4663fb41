"""hympi-pencil's user errors (issue 16): one line naming the value, exit 2, nothing launched."""

from __future__ import annotations

import pytest

from conftest import hympi


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
