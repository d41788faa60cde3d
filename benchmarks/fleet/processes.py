"""The fleet's processes: real ``taskq workgroup start`` supervisors and their children,
and what /proc says they cost.

Each workgroup writes its JSON log (its own lines and its children's, re-emitted with
``worker``) to a file; ``Workgroup.events`` reads what is new each time it is asked.
CPU is read from ``/proc/<pid>/stat`` (user + system); for Postgres the postmaster's
counters include the backends it has reaped, so a backend that came and went is counted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")

ACTORS = "benchmarks.fleet.actors:registry"


def workgroup_toml(
    name: str, children: int, concurrency: int, poll_interval: float | None = None
) -> str:
    lines = [
        f'actors = "{ACTORS}"',
        "[defaults]",
        f"max_concurrency = {concurrency}",
        'queues = ["fleet"]',
        *([f"poll_interval = {poll_interval!r}"] if poll_interval is not None else []),
        "[supervisor]",
        "shutdown_grace = 40",
    ]
    for n in range(children):
        lines += ["[[workers]]", f'name = "{name}-{n:02d}"']
    return "\n".join(lines) + "\n"


class Workgroup:
    """One ``taskq workgroup start`` process and its log."""

    def __init__(
        self,
        name: str,
        workdir: Path,
        children: int,
        concurrency: int,
        poll_interval: float | None = None,
    ) -> None:
        self.name = name
        self.config = workdir / f"{name}.toml"
        self.config.write_text(workgroup_toml(name, children, concurrency, poll_interval))
        self.log_path = workdir / f"{name}.log"
        self.children = children
        self.process: subprocess.Popen[bytes] | None = None
        self._offset = 0
        self._events: list[dict[str, Any]] = []

    def start(self, env: dict[str, str]) -> None:
        self._offset, self._events = 0, []
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "taskq", "workgroup", "start", str(self.config)],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        try:
            with self.log_path.open("rb") as log:
                log.seek(self._offset)
                data = log.read()
        except OSError:
            data = b""
        complete = data.rpartition(b"\n")[0]
        if complete:
            self._offset += len(complete) + 1
            for raw in complete.split(b"\n"):
                try:
                    line = json.loads(raw)
                except ValueError:
                    line = {"event": "<text>", "text": raw.decode(errors="replace")}
                self._events.append(line if isinstance(line, dict) else {"event": "<text>"})
        if name is None:
            return list(self._events)
        return [e for e in self._events if e.get("event") == name]

    def child_pids(self) -> list[int]:
        started = self.events("workgroup-child-started")
        ended = {e.get("child_pid") for e in self.events("workgroup-child-exited")}
        return [e["child_pid"] for e in started if e.get("child_pid") not in ended]

    def stop(self, timeout: float = 120.0) -> int | None:
        process = self.process
        if process is None or process.poll() is not None:
            return process.returncode if process is not None else None
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            return process.wait(timeout=30)


class Fleet:
    """Several workgroups started and stopped together."""

    def __init__(
        self,
        workdir: Path,
        workgroups: int,
        children: int,
        concurrency: int,
        poll_interval: float | None = None,
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.groups = [
            Workgroup(f"wg{g}", workdir, children, concurrency, poll_interval)
            for g in range(workgroups)
        ]

    @property
    def size(self) -> int:
        return sum(g.children for g in self.groups)

    def start(self, env: dict[str, str], timeout: float) -> float:
        """Start every workgroup; return the seconds until every child said
        ``worker-started``. Raises when one did not within ``timeout``."""
        started = time.monotonic()
        for group in self.groups:
            group.start(env)
        deadline = started + timeout
        while True:
            ready = sum(len(g.events("worker-started")) for g in self.groups)
            if ready >= self.size:
                return time.monotonic() - started
            dead = [g.name for g in self.groups if g.process and g.process.poll() is not None]
            if dead or time.monotonic() > deadline:
                tail = self.groups[0].log_path.read_text(errors="replace").splitlines()[-20:]
                raise RuntimeError(
                    f"{ready}/{self.size} workers started (exited: {dead or 'none'}); "
                    "the first workgroup's log ends:\n" + "\n".join(tail)
                )
            time.sleep(0.5)

    def supervisor_pids(self) -> list[int]:
        return [g.process.pid for g in self.groups if g.process is not None]

    def worker_pids(self) -> list[int]:
        return [pid for g in self.groups for pid in g.child_pids()]

    def events(self) -> list[dict[str, Any]]:
        return [e for g in self.groups for e in g.events()]

    def event_counts(self, names: Iterable[str]) -> dict[str, int]:
        wanted = set(names)
        counts = Counter(e.get("event") for e in self.events() if e.get("event") in wanted)
        return {name: counts.get(name, 0) for name in sorted(wanted)}

    def text_matches(self, needle: str) -> int:
        return sum(1 for e in self.events() if needle in json.dumps(e))

    def stop(self) -> list[int | None]:
        for group in self.groups:
            if group.process is not None and group.process.poll() is None:
                group.process.send_signal(signal.SIGTERM)
        return [group.stop() for group in self.groups]


# -- /proc -------------------------------------------------------------------------------
def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw.rsplit(")", 1)[1].split()


def cpu_seconds(pids: Iterable[int], *, reaped: bool = False) -> float:
    """User + system seconds of ``pids`` (``reaped``: with their waited-for children)."""
    total = 0
    for pid in pids:
        fields = _stat(pid)
        if fields is None:
            continue
        # after the ")": state is fields[0]; utime, stime, cutime, cstime are 11..14
        total += int(fields[11]) + int(fields[12])
        if reaped:
            total += int(fields[13]) + int(fields[14])
    return total / TICK


def children_of(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and int(fields[1]) == parent:
                found.append(int(entry))
    return found


def postgres_cpu(postmaster: int) -> float:
    """Every second of CPU the cluster used: the postmaster, the backends it reaped, the
    ones alive now."""
    return cpu_seconds([postmaster], reaped=True) + cpu_seconds(children_of(postmaster))


def memory_kib(pid: int) -> tuple[int, int] | None:
    """(RSS, PSS) of one process in KiB (PSS shares the pages it shares with others)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    return _kib(status, "VmRSS:"), _kib(rollup, "Pss:")


def _kib(text: str, key: str) -> int:
    return next((int(line.split()[1]) for line in text.splitlines() if line.startswith(key)), 0)
