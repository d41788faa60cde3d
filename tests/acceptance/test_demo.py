"""`taskq demo` is the first thing a new user runs: it must tell the whole story and exit 0."""

from __future__ import annotations

import os
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


def _new_shell_env() -> dict[str, str]:
    """A new shell's environment: the PATH without this venv's bin/ (no activated venv)."""
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    path = [p for p in os.environ.get("PATH", "").split(os.pathsep) if p and p != bin_dir]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "TASKQ_DSN")}
    env["PATH"] = os.pathsep.join(path or ["/usr/bin", "/bin"])
    return env


def test_the_demo_s_follow_up_commands_work() -> None:
    """ "`taskq jobs show ID` for more" can be followed: the store is kept, and the
    printed commands (with its DSN and a real job id) work as printed, pasted into a new
    shell whose PATH does not have taskq (as after `make demo`)."""
    env = _new_shell_env()
    bin_dir = os.path.dirname(os.path.abspath(sys.executable))
    found = shutil.which("taskq", path=env["PATH"])
    assert found is None or os.path.dirname(found) != bin_dir  # really not on the PATH
    script = os.path.join(bin_dir, "taskq")
    proc = subprocess.run([script, "demo"], capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    kept = re.search(r"^The demo's store is kept in (\S+);", proc.stdout, re.MULTILINE)
    assert kept, proc.stdout
    try:
        commands = re.findall(r"^  (\S*taskq --dsn .*)$", proc.stdout, re.MULTILINE)
        shows = [c for c in commands if " jobs show " in c]
        assert shows and len(commands) == 3, proc.stdout
        activate = re.search(
            r"^\(`(\. .*)` puts `taskq` on this shell's PATH\)$", proc.stdout, re.M
        )
        assert activate, proc.stdout
        for command in commands:
            done = subprocess.run(
                ["bash", "-c", command], capture_output=True, text=True, timeout=60, env=env
            )
            assert done.returncode == 0, (command, done.stderr)
        shown = subprocess.run(
            ["bash", "-c", shows[0] + " --json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert '"state": "dead"' in shown.stdout
        dsn = shlex.split(commands[-1])[2]
        # the other hint: after activating the venv, plain `taskq` works in that shell
        stats = subprocess.run(
            [
                "bash",
                "-c",
                f"{activate.group(1)} && taskq --dsn {shlex.quote(dsn)} jobs stats",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert stats.returncode == 0 and "succeeded" in stats.stdout, stats.stderr
    finally:
        shutil.rmtree(kept.group(1), ignore_errors=True)
