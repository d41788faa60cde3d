"""`taskq demo` is the first thing a new user runs: it must tell the whole story and exit 0."""

from __future__ import annotations

import re
import subprocess
import sys


def test_demo_accounts_for_every_job() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskq", "demo"], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout

    def count(label: str) -> int:
        match = re.search(rf"^{re.escape(label)}\s+(\d+)$", out, re.MULTILINE)
        assert match, f"{label!r} missing from the summary:\n{out}"
        return int(match.group(1))

    assert count("left queued or running (must be 0)") == 0
    assert count("dead/poison") == 1  # poison_pill: crashed two pool processes
    assert count("dead/crashed") >= 1  # charge_card 7 took its (non-idempotent) worker down
    assert count("dead/failed") == 2  # fetch_feed 0 and 40 never succeed
    assert count("worker processes restarted by the workgroup") >= 3
    assert count("jobs rescued at once from dead workers") >= 1
    assert "Traceback" not in proc.stderr
