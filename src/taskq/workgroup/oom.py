"""Was a child worker OOM-killed? The kernel log names every process the OOM killer ends.

A worker killed by the OOM killer exits by SIGKILL, like one an operator killed; only
the kernel log tells them apart (``Out of memory: Killed process 4242 (python) ...``).
Best effort: where ``dmesg`` cannot be read (most containers) the answer is False, and
the death blames no job (taskq.blame).
"""

from __future__ import annotations

import re
import subprocess

_KILLED = re.compile(r"killed process (\d+)\b", re.IGNORECASE)


def killed_pids(kernel_log: str) -> set[int]:
    """The pids the OOM killer names in ``kernel_log``."""
    return {int(pid) for pid in _KILLED.findall(kernel_log)}


def oom_killed(pid: int, *, since: str = "-5min") -> bool:
    """True if the recent kernel log says the OOM killer killed ``pid``. Blocking."""
    try:
        done = subprocess.run(
            ["dmesg", "--since", since], capture_output=True, text=True, timeout=2, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and pid in killed_pids(done.stdout)
