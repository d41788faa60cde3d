"""A job sent to a busy process to wait in its pipe (the pool's pipelining): it starts the
moment the job before it ends, and it is never charged for what happens before its turn.

Each test fills a one-process pool with a held job, queues a second behind it, and checks
what the second one sees: the first one's death, a cancel while it waits, its own
timeout counted from its start."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from taskq.exceptions import JobCancelled, ProcessDied
from taskq.procpool import ProcessPool
from tests.support.procpool_support import (
    all_breaks,
    assert_no_process_left,
    capture_taskq_logs,
    events,
    make_pool,
    running_pid,
    started,
    until,
)


async def _queued_behind_a_held_job(
    pool: ProcessPool,
    tmp_path: Path,
    job_id: str,
    actor: str = "whoami",
    args: str = "[]",
    **options: Any,
) -> tuple[asyncio.Task[str], asyncio.Task[str], int, Path]:
    """A held job running on the pool's one process, and ``job_id`` queued behind it."""
    release = tmp_path / "release"
    held = asyncio.create_task(pool.submit("hold", json.dumps([str(release)]), "{}", job_id="held"))
    pid = await running_pid(pool, "held")
    queued = asyncio.create_task(pool.submit(actor, args, "{}", job_id=job_id, **options))
    await until(lambda: pool.queued_jobs.get(job_id) == pid, what=f"{job_id} to be queued")
    assert job_id not in pool.running_jobs  # waiting in the pipe is not running
    return held, queued, pid, release


async def test_a_queued_job_runs_on_the_same_process_right_after_the_one_before(
    tmp_path: Path,
) -> None:
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        held, queued, pid, release = await _queued_behind_a_held_job(pool, tmp_path, "next")
        release.touch()
        assert int(await held) == pid
        assert json.loads(await queued)["pid"] == pid
        assert pool.queued_jobs == {} and pool.running_jobs == {}
        assert await pool.submit("add", "[1, 2]", "{}") == "3"  # offered again afterwards
    finally:
        await running.stop()
    assert_no_process_left()


async def test_a_queued_job_is_not_charged_when_the_process_before_it_dies(
    tmp_path: Path,
) -> None:
    """The running job's process is killed: that job dies (named), the queued one was never
    taken: it runs on the replacement process and succeeds; one break, not two."""
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        held, queued, pid, _release = await _queued_behind_a_held_job(pool, tmp_path, "next")
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ProcessDied, match="SIGKILL"):
            await held
        replacement = json.loads(await queued)["pid"]
        assert replacement != pid
        assert all_breaks() == breaks_before + 1
    finally:
        await running.stop()
    assert_no_process_left([pid])


async def test_cancelling_a_queued_job_leaves_the_job_before_it_unharmed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``cancel`` of a job waiting in the pipe: the running job finishes with its result;
    the queued one raises JobCancelled; its process is stopped before ``cancel`` returns;
    no break."""
    capture_taskq_logs(caplog)
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    breaks_before = all_breaks()
    try:
        held, queued, pid, release = await _queued_behind_a_held_job(pool, tmp_path, "victim")
        cancelling = asyncio.create_task(pool.cancel("victim"))
        await until(
            lambda: events(caplog, "process-pool-job-cancelled"), what="the cancel to register"
        )
        assert not cancelling.done() and not held.done()  # returns once its process is gone
        release.touch()
        assert int(await held) == pid  # the job before it ran to the end
        assert await cancelling is True
        with pytest.raises(JobCancelled):
            await queued
        assert all_breaks() == breaks_before
        assert await pool.submit("add", "[2, 2]", "{}") == "4"
    finally:
        await running.stop()
    assert_no_process_left([pid])


async def test_a_queued_jobs_timeout_counts_from_its_own_start(tmp_path: Path) -> None:
    """Queued behind a job held for longer than its own timeout, the job still succeeds:
    its timeout starts when its process starts it, not when it was sent."""
    pool = make_pool(tmp_path, size=1)
    running = await started(pool)
    try:
        held, queued, pid, release = await _queued_behind_a_held_job(
            pool, tmp_path, "quick", actor="add", args="[20, 22]", timeout=0.5
        )
        waited = asyncio.get_running_loop().time()
        await until(lambda: asyncio.get_running_loop().time() - waited > 1.0, what="1 s")
        release.touch()
        assert int(await held) == pid
        assert await queued == "42"
    finally:
        await running.stop()
    assert_no_process_left()
