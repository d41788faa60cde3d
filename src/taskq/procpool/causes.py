"""Naming why a pool process died: signal or exit code, and whether the kernel OOM-killed it.

Everything here is best effort and never raises: a cause we cannot read is reported as
unknown (``-1`` / ``None``), never as an error that hides the death itself.

* ``exit_status(exitcode)`` splits ``multiprocessing``'s exit code (negative: a signal)
  into ``(exit_code, exit_signal)``.
* ``OomCounter`` finds the memory cgroup of a process (cgroup v2 ``memory.events``, or v1
  ``memory.oom_control``) and reads its ``oom_kill`` counter; the pool reads it when a job
  starts and again when its process dies, and a positive delta names an OOM kill.
* ``dmesg_oom_kills()`` counts recent "killed process" kernel lines where ``dmesg`` is
  readable (the fallback when no cgroup counter is).
* ``memory_limit_mib()`` is the ``RLIMIT_AS`` soft limit in MiB, ``-1`` if unlimited.
"""

from __future__ import annotations

import resource
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")


def exit_status(exitcode: int | None) -> tuple[int | None, str | None]:
    """``(exit_code, exit_signal)`` from a ``Process.exitcode`` (negative means a signal)."""
    if exitcode is None or exitcode >= 0:
        return exitcode, None
    try:
        return None, signal.Signals(-exitcode).name
    except ValueError:
        return None, f"signal {-exitcode}"


def memory_limit_mib() -> int:
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    return -1 if soft == resource.RLIM_INFINITY else soft // (1024 * 1024)


def _read_counter(path: Path, key: str) -> int | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            try:
                return int(value)
            except ValueError:
                return None
    return None


@dataclass(frozen=True, slots=True)
class OomCounter:
    """The ``oom_kill`` counter of one memory cgroup (a file and the key inside it)."""

    path: Path
    key: str = "oom_kill"

    @classmethod
    def for_pid(
        cls, pid: int | str, *, root: Path = CGROUP_ROOT, proc: Path = Path("/proc")
    ) -> OomCounter | None:
        """The counter of ``pid``'s memory cgroup, or None where no counter is readable."""
        try:
            lines = (proc / str(pid) / "cgroup").read_text().splitlines()
        except OSError:
            return None
        candidates: list[Path] = []
        for line in lines:
            _hier, _, rest = line.partition(":")
            controllers, _, cgroup_path = rest.partition(":")
            relative = cgroup_path.lstrip("/")
            if controllers == "":  # cgroup v2 unified hierarchy
                candidates.append(root / relative / "memory.events")
                candidates.append(root / "unified" / relative / "memory.events")
            elif "memory" in controllers.split(","):  # cgroup v1 memory controller
                candidates.append(root / "memory" / relative / "memory.oom_control")
        for candidate in candidates:
            if _read_counter(candidate, "oom_kill") is not None:
                return cls(candidate)
        return None

    def read(self) -> int | None:
        return _read_counter(self.path, self.key)


def dmesg_oom_kills(since: str = "-5min") -> int:
    """Kernel OOM-kill lines in the last minutes, or -1 where dmesg cannot be read."""
    try:
        done = subprocess.run(
            ["dmesg", "--since", since], capture_output=True, text=True, timeout=2, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return -1
    if done.returncode != 0:
        return -1
    return done.stdout.lower().count("killed process")


def describe_death(
    *,
    pid: int | None,
    exitcode: int | None,
    actor: str | None,
    oom_kills: int | None,
    oom_source: str = "memory.events",
) -> str:
    """A sentence for logs and ``last_error``: who died, how, running what, OOM or not."""
    exit_code, exit_signal = exit_status(exitcode)
    who = f"process {pid}" if pid is not None else "a pool process"
    if exit_signal is not None:
        how = f"killed by {exit_signal}"
    elif exit_code is not None:
        how = f"exited with code {exit_code}"
    else:
        how = "vanished (exit status unknown)"
    where = f" while running {actor}" if actor else ""
    oom = f" (OOM kill: {oom_source} oom_kill +{oom_kills})" if oom_kills else ""
    return f"{who} {how}{where}{oom}"


def cause_label(exitcode: int | None, oom_kills: int | None) -> str:
    """A low-cardinality label for ``taskq_process_pool_breaks_total{cause}``."""
    if oom_kills:
        return "oom_kill"
    exit_code, exit_signal = exit_status(exitcode)
    if exit_signal is not None:
        return exit_signal
    if exit_code is not None:
        return f"exit_code_{exit_code}"
    return "unknown"
