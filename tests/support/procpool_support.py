"""Helpers shared by the process pool tests: a pool factory, process accounting, logs, metrics."""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from taskq import metrics
from taskq.lifecycle import Parts
from taskq.procpool import ProcessPool
from taskq.restart import RestartPolicy
from tests.support import pgbouncer
from tests.support.helpers import async_wait_until

REGISTRY_REF = "tests.support.procpool_actors:registry"
CONTROL_ENV = "TASKQ_PROCPOOL_TEST_DIR"


def fast_policy() -> RestartPolicy:
    """Replacement delays of a few milliseconds, the burst limit of production."""
    return RestartPolicy(initial=0.01, factor=2.0, maximum=0.05)


def make_pool(control: Path, **options: Any) -> ProcessPool:
    settings: dict[str, Any] = {
        "size": 2,
        "kill_grace": 0.5,
        "initializer_timeout": 20.0,
        "breaker_threshold": 50,
        "restart_policy": fast_policy,
        "env": {CONTROL_ENV: str(control)},
    }
    settings.update(options)
    return ProcessPool(REGISTRY_REF, **settings)


async def started(pool: ProcessPool) -> Parts:
    """``pool`` started and running as a part, the way a worker runs its parts
    (``lifecycle.Parts``): ``await running.stop()`` stops it and returns once every
    process is reaped."""
    running = Parts([pool])
    await running.start()
    return running


def break_count(cause: str) -> float:
    return (
        metrics.WORKER.get_sample_value("taskq_process_pool_breaks_total", {"cause": cause}) or 0.0
    )


def all_breaks() -> float:
    total = 0.0
    for family in metrics.WORKER.collect():
        if family.name == "taskq_process_pool_breaks":
            total += sum(s.value for s in family.samples if s.name.endswith("_total"))
    return total


def recycle_count(reason: str) -> float:
    return (
        metrics.WORKER.get_sample_value("taskq_process_pool_recycles_total", {"reason": reason})
        or 0.0
    )


def gauge(name: str) -> float:
    return metrics.WORKER.get_sample_value(name) or 0.0


def events(caplog: pytest.LogCaptureFixture, name: str) -> list[dict[str, Any]]:
    """Fields of every captured log line whose event is ``name`` (with ``level`` added)."""
    found = []
    for record in caplog.records:
        if record.getMessage() == name:
            fields = dict(getattr(record, "taskq_fields", {}))
            fields["level"] = record.levelname
            found.append(fields)
    return found


# -- processes ------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, ppid) of a process, or None if it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def descendants(root: int) -> dict[int, str]:
    """Every live descendant of ``root``: pid -> state (``Z`` for a zombie)."""
    children: dict[int, list[int]] = {}
    states: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        stat = _stat(int(entry))
        if stat is None:
            continue
        states[int(entry)] = stat[0]
        children.setdefault(stat[1], []).append(int(entry))
    found: dict[int, str] = {}
    todo = list(children.get(root, []))
    while todo:
        pid = todo.pop()
        found[pid] = states[pid]
        todo.extend(children.get(pid, []))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _is_forkserver(pid: int) -> bool:
    cmdline = _cmdline(pid)
    return b"multiprocessing.forkserver" in cmdline or b"resource_tracker" in cmdline


def fork_servers(root: int) -> list[int]:
    """The multiprocessing fork servers among ``root``'s live descendants."""
    return [pid for pid in descendants(root) if b"multiprocessing.forkserver" in _cmdline(pid)]


def leftover_processes() -> dict[int, str]:
    """Descendants of this test process other than multiprocessing's own helpers
    (the forkserver and the resource tracker, shared by every pool in the process) and
    the session's PgBouncer (tests/support/pgbouncer.py)."""
    return {
        pid: state
        for pid, state in descendants(os.getpid()).items()
        if not _is_forkserver(pid) and pid not in pgbouncer.RUNNING
    }


def _cmdlines(pids: dict[int, str]) -> dict[int, str]:
    """What each left-behind process is (a leak's owner is then easy to find)."""
    found = {}
    for pid in pids:
        found[pid] = _cmdline(pid).replace(b"\0", b" ").decode() or "?"
    return found


def assert_no_process_left(pids: list[int] | None = None) -> None:
    left = leftover_processes()
    assert left == {}, f"processes left behind (pid: state): {left} {_cmdlines(left)}"
    for pid in pids or []:
        stat = _stat(pid)
        assert stat is None or (stat[0] in ("Z", "X") and stat[1] != os.getpid()), (
            f"pool process {pid} is still there: {stat}"
        )


def parent_of(pid: int) -> int | None:
    """The parent pid of a living process (a forkserver child's: the fork server)."""
    stat = _stat(pid)
    return None if stat is None else stat[1]


def gone(pid: int) -> bool:
    stat = _stat(pid)
    return stat is None or stat[0] in ("Z", "X")


async def until(
    condition: Callable[[], Any], *, timeout: float = 20.0, what: str = "condition"
) -> Any:
    """``async_wait_until`` for a plain (not awaitable) condition, polled every 10 ms."""

    async def check() -> Any:
        return condition()

    return await async_wait_until(check, timeout=timeout, interval=0.01, what=what)


async def holding(pool: ProcessPool, release: Path, job_id: str) -> tuple[asyncio.Task[str], int]:
    """A ``hold`` job submitted to ``pool`` (it runs until ``release`` exists), and the
    pid running it once it runs."""
    job = asyncio.create_task(pool.submit("hold", json.dumps([str(release)]), "{}", job_id=job_id))
    return job, await running_pid(pool, job_id)


async def running_pid(pool: ProcessPool, job_id: str) -> int:
    pid: int = await until(lambda: pool.running_jobs.get(job_id), what=f"{job_id} to run")
    return pid


def capture_taskq_logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="taskq")


async def gather_all(*awaitables: Awaitable[Any]) -> list[Any]:
    return list(await asyncio.gather(*awaitables, return_exceptions=True))
