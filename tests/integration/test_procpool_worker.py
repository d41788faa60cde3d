"""The pool inside a real worker, on both stores: every job ends accounted for.

A worker (in-process ``Worker``, real store, real pool processes) runs cpu_bound actors
that crash, time out and succeed side by side; the jobs' rows show the crash rules, the
causes and the bystanders' clean records.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from taskq import AsyncClient
from taskq.procpool.priority import SLICE_NS
from taskq.store.postgres import PostgresStore
from tests.conftest import StoreTarget
from tests.support import procpool_actors as actors
from tests.support import worker_cpu_actors as mixed
from tests.support.helpers import migrated_store, wait_until
from tests.support.procpool_actors import kernel_takes_custom_slices, scheduler_slice
from tests.support.procpool_support import assert_no_process_left
from tests.support.worker_harness import ROOT, running_worker, wait_for_states

ACTORS = "tests.support.procpool_actors:registry"


async def test_worker_applies_the_crash_rules_and_bystanders_are_never_charged(target, store):
    async with AsyncClient(store=store) as client:
        poison = await client.enqueue(actors.crash_idempotent, "segfault")
        crashed = await client.enqueue(actors.fail_in_job, "os_exit")
        slow = await client.enqueue(actors.spin_past_timeout)
        bystanders = await client.enqueue_many(actors.add, [((i, i), {}) for i in range(12)])
        async with running_worker(target, actors=ACTORS, cpu_workers=2, max_concurrency=4):
            done = await wait_for_states(
                store, [poison, crashed, slow, *bystanders], {"succeeded", "dead"}, timeout=60
            )
    by_id = {job.id: job for job in done}

    # idempotent: retried once on a fresh process, then poison, with the cause recorded
    assert by_id[poison].dead_reason == "poison"
    assert by_id[poison].crash_count == 2
    assert "killed by SIGSEGV while running crash_idempotent" in by_id[poison].last_error

    # non-idempotent: not re-run
    assert by_id[crashed].dead_reason == "crashed"
    assert by_id[crashed].crash_count == 1
    assert "exited with code 3 while running fail_in_job" in by_id[crashed].last_error

    # a timeout is a failure: retried under the retry rules, never a crash
    assert by_id[slow].dead_reason == "failed"
    assert by_id[slow].attempts == 2 and by_id[slow].crash_count == 0
    assert "JobTimedOut" in by_id[slow].last_error

    for index, job_id in enumerate(bystanders):
        job = by_id[job_id]
        assert job.state == "succeeded", job
        assert job.crash_count == 0 and job.attempts == 1
        assert job.result == 2 * index
    assert_no_process_left()


async def test_an_oversized_cpu_result_is_dropped_and_the_job_is_not_re_run(target, store):
    """The worker's result limit reaches the pool: the child does not send a result over
    it; the job ran, so it is recorded succeeded, once, with the reason and no result."""
    async with AsyncClient(store=store) as client:
        big = await client.enqueue(actors.huge_result, 8 * 1024)
        small = await client.enqueue(actors.huge_result, 100)
        async with running_worker(
            target, actors=ACTORS, cpu_workers=1, max_concurrency=2, result_max_bytes=4 * 1024
        ):
            done = await wait_for_states(store, [big, small], {"succeeded", "dead"}, timeout=60)
    by_id = {job.id: job for job in done}
    assert by_id[big].state == "succeeded" and by_id[big].result is None
    assert by_id[big].attempts == 1 and by_id[big].crash_count == 0
    assert by_id[big].last_error.startswith("result dropped: ")
    assert "over the limit of 4096" in by_id[big].last_error, by_id[big].last_error
    assert by_id[small].state == "succeeded" and len(by_id[small].result) == 100
    assert_no_process_left()


async def test_the_pool_processes_run_cpu_nice_steps_below_the_worker(target, store):
    """``cpu_nice`` (10 by default) reaches the pool: its jobs run that much nicer than
    the worker, in long slices, so a saturated pool leaves the cores to the worker's loop
    (and to a waking Postgres backend) first; ``cpu_nice = 0``: neither."""
    own = os.getpriority(os.PRIO_PROCESS, 0)
    own_slice = scheduler_slice()  # the kernel's default (this process never asked)
    long_slice = SLICE_NS if kernel_takes_custom_slices() else own_slice
    async with AsyncClient(store=store) as client:
        for overrides, nice, slice_ns in (
            ({}, min(own + 10, 19), long_slice),
            ({"cpu_nice": 0}, own, own_slice),
        ):
            job = await client.enqueue(actors.niceness)
            async with running_worker(
                target, actors=ACTORS, cpu_workers=1, max_concurrency=2, **overrides
            ):
                [done] = await wait_for_states(store, [job], {"succeeded"}, timeout=60)
            assert done.result["nice"] == nice, (overrides, done.result)
            assert done.result["slice_ns"] == slice_ns, (overrides, done.result)
    assert_no_process_left()


async def test_without_max_concurrency_a_cpu_worker_gets_consumers_for_its_pool(target, store):
    """Four processes, no --max-concurrency: 2 x 4 + 12 consumers (two jobs a process, and
    room for a paced claim of up to twelve), and its jobs run."""
    async with AsyncClient(store=store) as client:
        jobs = await client.enqueue_many(actors.add, [((i, 1), {}) for i in range(12)])
        async with running_worker(
            target, actors=ACTORS, cpu_workers=4, max_concurrency=None
        ) as worker:
            done = await wait_for_states(store, jobs, {"succeeded"}, timeout=60)
            assert worker.concurrency == 20
    assert sorted(job.result for job in done) == list(range(1, 13))
    assert_no_process_left()


async def test_a_cpu_worker_paces_its_claims_only_at_its_default_consumers(target, store):
    """No --max-concurrency: claims sized by the pool's pace, from max(6, N + 2) to the
    consumers free above the refill mark; an explicit --max-concurrency: every free
    consumer, no pace."""
    async with AsyncClient(store=store) as client:
        for max_concurrency, bounds in ((None, (6, 12)), (16, None)):
            job = await client.enqueue(actors.add, 1, 1)
            async with running_worker(
                target, actors=ACTORS, cpu_workers=2, max_concurrency=max_concurrency
            ) as worker:
                await wait_for_states(store, [job], {"succeeded"}, timeout=60)
                assert worker.buffer is not None and worker.buffer.refill_at == 4
                pace = worker.buffer.pace
                assert (pace and (pace.low, pace.high)) == bounds, max_concurrency
    assert_no_process_left()


async def test_io_jobs_pass_a_cpu_backlog_that_saturates_the_pool(target, store, tmp_path: Path):
    """Mixed work: a worker with cpu_bound and async actors. Twenty held cpu jobs queued
    first, an async job after them: the async job runs while the backlog still waits (the
    cpu jobs take a share of the consumers, not all ten; claims leave the cpu actors out
    while the pool is saturated), then the backlog runs once released."""
    release = tmp_path / "release"
    async with AsyncClient(store=store) as client:
        backlog = await client.enqueue_many(
            mixed.cpu_hold, [((str(release),), {}) for _ in range(20)]
        )
        io_job = await client.enqueue(mixed.ping, "through")
        async with running_worker(
            target,
            actors="tests.support.worker_cpu_actors:registry",
            cpu_workers=2,
            max_concurrency=10,
        ):
            [done] = await wait_for_states(store, [io_job], {"succeeded"}, timeout=60)
            assert done.result == "through"
            states = [(await client.get(job_id)).state for job_id in backlog]
            assert states.count("queued") >= 20 - 6, states  # at most the share was claimed
            assert "succeeded" not in states  # all held: the async job went past them
            release.touch()
            finished = await wait_for_states(store, backlog, {"succeeded"}, timeout=60)
    assert all(job.attempts == 1 and job.crash_count == 0 for job in finished)
    assert_no_process_left()


async def test_a_saturated_mixed_worker_claims_past_its_cpu_backlog_only_for_news(
    pg_target: StoreTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the pool works a cpu backlog off, every top-up of the cpu share used to be
    followed by a claim with the cpu actors left out, which on Postgres reads past the
    whole backlog to find nothing. Such a claim now waits for news (a job's notification,
    the poll). The real store's claims, counted: top-ups many, claims past the backlog a
    handful; an async job enqueued mid-backlog is still claimed past it at once (it starts
    while most of the backlog waits)."""
    claims: list[bool] = []  # each claim: were the cpu actors left out?
    real_claim = PostgresStore.claim

    async def counted(self: PostgresStore, *args: Any, **kwargs: Any) -> Any:
        left_out = kwargs.get("exclude_actors", args[4] if len(args) > 4 else ())
        claims.append("cpu_nap" in left_out)
        return await real_claim(self, *args, **kwargs)

    monkeypatch.setattr(PostgresStore, "claim", counted)
    async with migrated_store(pg_target.dsn, pg_target.schema) as store:
        async with AsyncClient(store=store) as client:
            backlog = await client.enqueue_many(mixed.cpu_nap, [((20,), {}) for _ in range(150)])
            async with running_worker(
                pg_target,
                actors="tests.support.worker_cpu_actors:registry",
                cpu_workers=2,
                max_concurrency=10,
                poll_interval=30.0,
            ):
                await wait_for_states(store, backlog[:20], {"succeeded"}, timeout=60)
                top_ups_before = claims.count(False)
                io_job = await client.enqueue(mixed.ping, "past the backlog")
                [done] = await wait_for_states(store, [io_job], {"succeeded"}, timeout=60)
                left = [(await client.get(job_id)).state for job_id in backlog]
                finished = await wait_for_states(store, backlog, {"succeeded"}, timeout=120)
    assert done.result == "past the backlog"
    assert left.count("queued") >= 50, left  # it went past the backlog, not after it
    assert len(finished) == 150
    top_ups, past_backlog = claims.count(False), claims.count(True)
    assert top_ups >= 20 and top_ups > top_ups_before, claims  # the share was topped up often
    # the first claim, the async job's notification and its follow-up (each at most
    # twice: a claim that came back full goes on): never one a top-up
    assert past_backlog <= 6, (past_backlog, top_ups)
    assert_no_process_left()


async def test_a_mixed_worker_claims_its_cpu_backlog_without_waiting_for_the_poll(target, store):
    """The cpu share's nudges are never lost: with a poll interval far longer than the
    wait, a mixed worker drains a backlog of quick cpu jobs, every one claimed after a
    nudge (a nudge that came while a claim ran used to be dropped: the fetcher then
    slept until the next poll)."""
    async with AsyncClient(store=store) as client:
        jobs = await client.enqueue_many(mixed.cpu_square, [((i,), {}) for i in range(80)])
        async with running_worker(
            target,
            actors="tests.support.worker_cpu_actors:registry",
            cpu_workers=2,
            max_concurrency=10,
            poll_interval=300.0,
        ):
            done = await wait_for_states(store, jobs, {"succeeded"}, timeout=120)
    assert sorted(job.result for job in done) == sorted(i * i for i in range(80))
    assert_no_process_left()


# Run in a fresh interpreter (this test process may have a fork server already): a worker
# of cpu actors whose store creation looks for its fork server, then refuses to start.
_FORK_SERVER_BEFORE_THE_STORE = """
import json, os, sys
import taskq.worker.worker as module
from taskq.exceptions import ConfigError
from taskq.worker.config import WorkerConfig
from taskq.worker.main import run
from tests.support.procpool_support import fork_servers

def create_store(*args, **kwargs):
    print(json.dumps(fork_servers(os.getpid())), flush=True)
    raise ConfigError("stopped by the test once the store was asked for")

module.create_store = create_store
sys.exit(run(WorkerConfig(actors=sys.argv[1], dsn=sys.argv[2])))
"""


def test_the_fork_server_is_starting_before_the_worker_creates_its_store(tmp_path: Path):
    """A worker of cpu actors starts its pool's fork server as soon as its registry is
    loaded, so the server imports while the worker imports its store and connects (off
    the path to the first CPU job); a worker that then fails to start does not leave it
    behind. Before, the first pool process started the server after the stores."""
    import subprocess
    import sys

    from tests.support.procpool_support import gone

    done = subprocess.run(
        [sys.executable, "-c", _FORK_SERVER_BEFORE_THE_STORE, ACTORS, str(tmp_path / "q.db")],
        cwd=ROOT,  # tests.support is importable there
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr  # cannot start: the one error line
    assert "stopped by the test" in done.stderr
    servers = json.loads(done.stdout.splitlines()[0])
    assert len(servers) == 1, done.stdout
    # it watches a pipe its owner held: it ends on its own
    wait_until(lambda: gone(servers[0]), timeout=20, what="the fork server to end with its worker")


def test_a_fork_server_that_cannot_start_early_is_left_to_the_pool(monkeypatch):
    """The early start is only a head start: an OSError there (no temporary directory
    for the server's socket, ...) does not stop the worker; the pool's first process
    starts the server itself and reports what fails as every pool start does."""
    from multiprocessing import forkserver

    from taskq.worker.cpu_runner import start_fork_server

    def refuse() -> None:
        raise FileNotFoundError("no usable temporary directory")

    monkeypatch.setattr(forkserver, "ensure_running", refuse)
    start_fork_server()  # no exception
