"""Poison means "this job killed its runner", with a real pool, real signals, both stores.

A cpu_bound job runs in a real pool process (the worker's ``CpuRunner`` over a pool whose
memory cgroup is a copied counter file: the ``cgroup`` fixture); its process is
SIGKILLed from outside, with or without the OOM counter going up; the outcome is written
to the real store. An OOM kill blames the job: twice is poison. An outside SIGKILL with no
OOM evidence blames nobody: the job re-runs and is charged, never poisoned.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from taskq import AsyncClient
from taskq.ids import uuid7
from taskq.jobs import OutcomeKind
from taskq.worker.cpu_runner import CpuRunner
from tests.support import procpool_actors
from tests.support import worker_actors as actors
from tests.support.procpool_support import capture_taskq_logs, events, make_pool, until
from tests.support.storekit import spec
from tests.support.worker_harness import config_for, running_worker, wait_for_states


async def kill_twice(store, target, tmp_path: Path, cgroup, *, oom: bool):
    root, counter = cgroup
    runner = CpuRunner(config_for(target), needed=True)
    # the fake cgroup
    runner._new_pool = lambda: make_pool(tmp_path, size=1, cgroup_root=root, stop_grace=1.0)
    await runner.start()  # the worker's cpu-pool part: start, run, stop
    part = asyncio.create_task(runner.run())
    actor = procpool_actors.registry.get("stubborn")  # writes its pid once it runs the job
    pid_file = tmp_path / "pid"
    job = spec("stubborn", args=[str(pid_file)], idempotent=True, max_crashes=2)
    await store.enqueue([job])
    kills = 7
    try:
        for _ in range(2):
            pid_file.unlink(missing_ok=True)
            worker = uuid7()
            (claimed,) = await store.claim(worker, ["default"], 1, 30.0)
            running = asyncio.create_task(runner.run_job(claimed, actor))
            pid = int(
                await until(
                    lambda: pid_file.exists() and pid_file.read_text(),
                    what="the job to run in its pool process",
                )
            )
            if oom:
                kills += 1
                counter.write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {kills}\n")
            os.kill(pid, signal.SIGKILL)
            outcome = await running
            assert outcome is not None and outcome.kind == OutcomeKind.CRASHED
            assert outcome.blamed is oom
            assert await store.complete(worker, [outcome]) == 1
    finally:
        runner.stop()
        await part
    return await store.get_job(job.id)


async def test_a_job_whose_process_is_oom_killed_twice_is_poison(store, target, tmp_path, cgroup):
    job = await kill_twice(store, target, tmp_path, cgroup, oom=True)
    assert (job.state, job.dead_reason, job.crash_count) == ("dead", "poison", 2)
    assert (job.blamed_crashes, job.unproven_crashes) == (2, 0)
    assert "OOM kill" in job.last_error


async def test_a_job_whose_process_is_sigkilled_from_outside_twice_is_not_poison(
    store, target, tmp_path, cgroup
):
    job = await kill_twice(store, target, tmp_path, cgroup, oom=False)
    assert (job.state, job.dead_reason, job.crash_count) == ("queued", None, 2)
    assert (job.blamed_crashes, job.unproven_crashes) == (0, 2)
    assert "killed by SIGKILL" in job.last_error and "OOM" not in job.last_error


async def test_jobs_blamed_for_a_shared_death_re_run_alone(
    store, target, tmp_path, runs_file, caplog
):
    """A worker running two jobs dies of a cause that points at a job: both are marked to
    run alone. The next worker runs each with nothing beside it: the other one waits, a
    plain job is given back and the fetcher claims nothing meanwhile; so a second blame
    would be a death alone."""
    capture_taskq_logs(caplog)
    release = tmp_path / "release"
    release.mkdir()
    async with AsyncClient(store=store) as client:
        x = await client.enqueue(actors.held_idempotent, "x", str(release))
        y = await client.enqueue(actors.held_idempotent, "y", str(release))
        lost = uuid7()
        assert len(await store.claim(lost, ["held"], 2, 30.0)) == 2
        rescued = await store.rescue_worker(lost, "worker exited with code 1", blamed=True)
        assert {r.state for r in rescued} == {"queued"}
        n = await client.enqueue(actors.held_idempotent, "n", str(release))
        async with running_worker(target, queues=["held"], max_concurrency=4):
            first = await until(
                lambda: next(iter(actors.runs(runs_file, "start")), None),
                what="one of the two to start",
            )
            second = "y" if first == "x" else "x"
            assert first in ("x", "y")
            await until(
                lambda: events(caplog, "job-waits-to-run-alone"),
                what="the other one to wait for its turn",
            )
            assert actors.runs(runs_file, "start") == [first]  # nothing beside it
            (release / first).touch()
            await until(
                lambda: actors.runs(runs_file, "start") == [first, second],
                what="the second to start once the first is done",
            )
            assert actors.runs(runs_file) == [first]  # the first had finished
            (release / second).touch()
            (release / "n").touch()
            jobs = await wait_for_states(store, [x, y, n], {"succeeded"})
    assert [j.crash_count for j in jobs] == [1, 1, 0]
    assert actors.runs(runs_file, "start") == [first, second, "n"]
