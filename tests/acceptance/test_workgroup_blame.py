"""Poison under a workgroup: the supervisor sees its child's exit and blames a job only
when the way the child died points at one (docs/jobs.md, "Blame and poison").

Real ``taskq workgroup start``, real worker children, real signals, both stores.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from taskq.client import AsyncClient
from tests.support.helpers import async_wait_until
from tests.support.workgroup_actors import exit_worker, held
from tests.support.workgroup_harness import Workgroup, write_config

pytestmark = pytest.mark.slow

CONFIG = """
[supervisor]
backoff_initial = 0.05
backoff_max = 0.1
shutdown_grace = 5

[[workers]]
name = "api"
poll_interval = 0.1
"""


async def test_jobs_in_flight_during_two_outside_sigkills_are_never_poisoned(
    target, store, tmp_path: Path
) -> None:
    release = tmp_path / "release"
    release.mkdir()
    wg = Workgroup(write_config(tmp_path / "wg.toml", CONFIG), target.env)
    try:
        async with AsyncClient(store=store) as client:
            ids = [await client.enqueue(held, f"k{i}", str(release)) for i in range(3)]
        for nth in (1, 2):
            pid = await asyncio.to_thread(wg.started_pid, "api", nth=nth)

            async def all_running(crashes: int = nth - 1) -> bool:
                jobs = [await store.get_job(i) for i in ids]
                return all(j.state == "running" and j.crash_count == crashes for j in jobs)

            await async_wait_until(all_running, what=f"three jobs running in child {nth}")
            os.kill(pid, signal.SIGKILL)  # an operator, a deploy: from outside
            await asyncio.to_thread(wg.wait_event, "workgroup-jobs-rescued", child_pid=pid)
        for i in range(3):
            (release / f"k{i}").touch()

        async def finished() -> list | None:
            jobs = [await store.get_job(i) for i in ids]
            return jobs if all(j.state in ("succeeded", "dead") for j in jobs) else None

        jobs = await async_wait_until(finished, timeout=60, what="the jobs to finish")
    finally:
        wg.cleanup()
    assert [(j.state, j.crash_count) for j in jobs] == [("succeeded", 2)] * 3


async def test_a_job_that_os_exits_its_worker_twice_alone_is_poison(
    target, store, tmp_path: Path
) -> None:
    wg = Workgroup(write_config(tmp_path / "wg.toml", CONFIG), target.env)
    try:
        async with AsyncClient(store=store) as client:
            job_id = await client.enqueue(exit_worker, 71)

        async def dead():
            job = await store.get_job(job_id)
            return job if job.state == "dead" else None

        job = await async_wait_until(dead, timeout=60, what="the job to end dead")
    finally:
        wg.cleanup()
    assert (job.dead_reason, job.crash_count) == ("poison", 2)
    assert "exited with code 71" in job.last_error and "observed by workgroup" in job.last_error
