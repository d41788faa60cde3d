"""Running queued jobs inline, in the caller's process, one at a time, with the real rules.

``drain`` claims one job at a time (``ORDER BY priority, run_at, id``, as a worker does),
runs it with the worker's own ``Executor`` (async actors awaited, sync and cpu_bound ones
in a thread: no process pool, so mocks and fixtures of the test's process apply) and
writes its outcome through the store's fenced ``complete``: a failure is retried with
the actor's backoff and dead after ``max_attempts``, an unknown actor is
``dead/unknown_actor``, a timeout counts as a failure. Nothing here decides an outcome;
``worker/outcomes.py`` and the store do.

Jobs that wait for a later time (a ``delay``, a retry's backoff) are made due when
nothing else is (``scheduled=True``, the default): the drain jumps to the next
scheduled moment instead of sleeping, so a job that always fails ends ``dead/failed``
within one ``drain`` call. Jobs enqueued by the jobs it runs are drained too.

The client's middleware (``Client(..., middleware=[...])``) runs around each job as a
worker's ``--middleware`` does: ``before_job`` / ``after_job``, and in a sync actor's
thread ``before_job_in_thread`` / ``after_job_in_thread`` (so Django's
``CloseOldConnections``, which ``taskq.contrib.django.client()`` carries, closes the
connection a sync job opened in the drain's thread, as it does in a worker's).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from ..client import AsyncClient
from ..exceptions import ConfigError
from ..ids import uuid7
from ..jobs import ClaimedJob, Job, Outcome, WorkerInfo
from ..registry import Registry
from ..store import Store
from ..worker.middleware import MiddlewareChain
from ..worker.outcomes import announce
from ..worker.runners import Executor
from ..worker.threads import ThreadRunner

DRAIN_LEASE = 3600.0  # seconds: nothing sweeps a drain's runs while it holds them
DEFAULT_MAX_RUNS = 1000
RESULT_MAX_BYTES = 64 * 1024  # as a worker's default
QUEUE_SCAN_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class Ran:
    """One run ``drain`` made, and how it ended.

    ``outcome`` is the run's end (``succeeded``, ``retry``, ``dead``); ``state`` the
    job's state after it was written (``succeeded``, ``queued`` (to be retried),
    ``dead``); ``job`` the job as stored after the run."""

    job_id: UUID
    actor: str
    queue: str
    attempt: int
    outcome: str
    state: str
    args: list[Any]
    kwargs: dict[str, Any]
    result: Any
    error: str | None
    dead_reason: str | None
    job: Job


def _queues_wanted(queue: str | Sequence[str] | None) -> list[str] | None:
    if queue is None:
        return None
    if isinstance(queue, str):
        return [queue]
    return list(queue)


async def _queues(store: Store, registry: Registry, wanted: list[str] | None) -> list[str]:
    if wanted is not None:
        return wanted
    queued = await store.list_jobs(state="queued", limit=QUEUE_SCAN_LIMIT)
    return sorted(registry.queues | {job.queue for job in queued})


async def drain_async(
    client: AsyncClient,
    registry: Registry,
    queue: str | Sequence[str] | None = None,
    *,
    scheduled: bool = True,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> list[Ran]:
    """Run the queued jobs on ``queue`` (a name, several, or every queue) until none is
    left; return the runs in the order they were made."""
    if max_runs < 1:
        raise ConfigError("max_runs must be >= 1")
    await client.open()
    store = client.store
    wanted = _queues_wanted(queue)
    worker_id = uuid7()
    await store.register_worker(
        WorkerInfo(
            id=worker_id,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            queues=wanted or sorted(registry.queues),
            worker_label="taskq.testing.drain",
        )
    )
    threads = ThreadRunner(thread_name="taskq-drain")
    middleware = MiddlewareChain(client.enqueuer.middleware)
    executor = Executor(
        registry,
        threads,
        None,
        RESULT_MAX_BYTES,
        in_thread=middleware.in_thread if middleware.has_thread_hooks else None,
        upstream=store.upstream_results,
    )
    runs: list[Ran] = []
    try:
        queues = await _queues(store, registry, wanted)
        settled = False
        while True:
            claimed = await store.claim(worker_id, queues, 1, DRAIN_LEASE)
            if not claimed:
                # the queues again only now: a run may have enqueued to a new one
                known, queues = queues, await _queues(store, registry, wanted)
                if queues != known:
                    continue
                if scheduled and await store.advance_next_scheduled(queues):
                    continue
                if scheduled and not settled:
                    settled = True  # a job may have come due between the claim and now
                    continue
                return runs
            settled = False
            job = claimed.jobs[0]
            if len(runs) >= max_runs:
                await store.give_back(worker_id, [(job.id, job.attempt)])
                raise AssertionError(
                    f"drain ran {max_runs} jobs and jobs are still queued (a job that "
                    "enqueues itself forever?); pass a larger max_runs if that is expected"
                )
            runs.append(await _run_one(store, executor, middleware, worker_id, job))
    finally:
        threads.close()
        await store.unregister_worker(worker_id)


async def _run_one(
    store: Store, executor: Executor, middleware: MiddlewareChain, worker_id: UUID, job: ClaimedJob
) -> Ran:
    middleware.before_job(job)
    outcome: Outcome | None = await executor.execute(job)
    middleware.after_job(job, outcome)
    if outcome is None:  # only a CPU pool gives a job back; drain has none
        await store.give_back(worker_id, [(job.id, job.attempt)])
        raise RuntimeError(f"job {job.id} was given back unexpectedly")
    if outcome.added:  # a workflow step that added steps: with them, in one transaction
        await store.complete_fanout(worker_id, outcome, outcome.added)
    else:
        await store.complete(worker_id, [outcome])
    announce([outcome])  # its end is logged once written, as a worker's acker does
    after = await store.get_job(job.id)
    assert after is not None  # nothing deletes a job between its run and this read
    return Ran(
        job_id=job.id,
        actor=job.actor,
        queue=job.queue,
        attempt=job.attempt,
        outcome=outcome.kind.value,
        state=after.state,
        args=after.args,
        kwargs=after.kwargs,
        result=after.result,
        error=outcome.error,
        dead_reason=outcome.dead_reason,
        job=after,
    )
