"""`taskq demo` is the first thing a new user runs: it must tell the whole story and exit 0."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys


def test_demo_accounts_for_every_job() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "taskq", "demo"], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    kept = re.search(r"^The demo's store is kept in (\S+);", out, re.MULTILINE)
    if kept:
        shutil.rmtree(kept.group(1), ignore_errors=True)

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


def test_the_demo_s_follow_up_commands_work() -> None:
    """ "`taskq jobs show ID` for more" can be followed: the store is kept, and the
    printed commands (with its DSN and a real job id) work as printed."""
    proc = subprocess.run(
        [sys.executable, "-m", "taskq", "demo"], capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = re.search(r"^The demo's store is kept in (\S+);", proc.stdout, re.MULTILINE)
    assert kept, proc.stdout
    try:
        commands = re.findall(r"^  (taskq --dsn .*)$", proc.stdout, re.MULTILINE)
        shows = [c for c in commands if " jobs show " in c]
        assert shows and len(commands) == 3, proc.stdout
        for command in commands:
            argv = shlex.split(command)
            done = subprocess.run(
                [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=60
            )
            assert done.returncode == 0, (command, done.stderr)
        shown = subprocess.run(
            [sys.executable, "-m", *shlex.split(shows[0]), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert '"state": "dead"' in shown.stdout
    finally:
        shutil.rmtree(kept.group(1), ignore_errors=True)
