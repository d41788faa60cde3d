"""What operators do through a client: look at jobs and wait for them, act on them
(retry, cancel), and set the fleet-wide controls (pause and resume queues, queue and
actor limits).

``AsyncOperations`` is the implementation, over the client's ``store``; ``Operations``
its synchronous mirror, which runs each call of its ``async_client`` on the client's
loop thread (``run``). ``AsyncClient`` and ``Client`` (taskq/client.py: the store's
lifecycle and the enqueue) inherit them, and provide what these abstract members ask
for, in public: nothing here reaches into a client's private members.
"""

from __future__ import annotations

import asyncio
import builtins
import difflib
import time
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from typing import Any, TypeVar
from uuid import UUID

from .exceptions import ActorNotFound, ConfigError, InvalidJobState, JobNotFound
from .inputs import actor_name, make_limits, parse_job_id, who
from .jobs import CancelResult, Job, JobState, Limits, QueueInfo, Rate
from .registry import Actor, ActorRef, check_queue_name
from .store import Store
from .store.queues import ACTOR, QUEUE
from .validation import check_int, check_text

T = TypeVar("T")
TERMINAL_STATES = frozenset({JobState.SUCCEEDED, JobState.DEAD, JobState.CANCELLED})


async def check_actor_known(store: Store, actor: ActorRef) -> str:
    """The name of the actor a limit is for, refused (``ActorNotFound``) when it is a
    name no worker recorded and no limit is set for: a typo, whose limit would hold
    nothing. An ``Actor`` object is taken as it is (its limit holds once its jobs run).
    The one check of ``set_actor_limits``, which ``taskq actors limit`` calls."""
    name = actor_name(actor)
    if isinstance(actor, Actor):
        return name
    recorded = await store.actor_configs()
    if name in recorded or (ACTOR, name) in await store.get_limits():
        return name
    close = difflib.get_close_matches(name, recorded, n=1)
    raise ActorNotFound(
        f"no worker recorded an actor named {name!r} (recorded: "
        f"{', '.join(sorted(recorded)) or 'none yet'}): "
        + (f"did you mean {close[0]!r}? " if close else "")
        + "check the name, or start a worker whose registry has it first"
    )


class AsyncOperations(ABC):
    """Look, act and control, over ``store`` (opened first)."""

    @property
    @abstractmethod
    def store(self) -> Store:
        """The store the client works on."""

    @abstractmethod
    async def open(self) -> None:
        """Open the store (once)."""

    # -- look ------------------------------------------------------------------------
    async def get(self, job_id: UUID | str) -> Job:
        await self.open()
        job = await self.store.get_job(parse_job_id(job_id))
        if job is None:
            raise JobNotFound(f"no job with id {job_id}")
        return job

    async def list(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        if state is not None and state not in JobState.__members__.values():
            raise ConfigError(
                f"unknown state {state!r}: expected one of {', '.join(s.value for s in JobState)}"
            )
        check_int(limit, "limit", 1)
        for name, value in (("queue", queue), ("tag", tag)):
            if value is not None:
                check_text(value, name)
        await self.open()
        return await self.store.list_jobs(state=state, queue=queue, tag=tag, limit=limit)

    async def stats(self) -> dict[str, int]:
        await self.open()
        return await self.store.stats()

    async def wait(
        self, job_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05
    ) -> Job:
        """Poll until the job is succeeded, dead or cancelled; TimeoutError past ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            job = await self.get(job_id)
            if job.state in TERMINAL_STATES:
                return job
            if time.monotonic() > deadline:
                raise TimeoutError(f"job {job.id} still {job.state} after {timeout}s")
            await asyncio.sleep(interval)

    # -- act -------------------------------------------------------------------------
    async def retry(self, job_id: UUID | str) -> None:
        """Re-queue a dead or cancelled job (attempts and crash count start again)."""
        job = await self.get(job_id)
        moved = await self.store.retry_jobs([job.id])
        if not moved and job.state in (JobState.DEAD, JobState.CANCELLED) and job.unique_key:
            raise InvalidJobState(
                f"job {job.id} cannot be retried: another job holds its unique key "
                f"{job.unique_key!r}"
            )
        if not moved:
            raise InvalidJobState(
                f"job {job.id} is {job.state}; only dead or cancelled jobs can be retried"
            )

    async def retry_all_dead(self) -> int:
        await self.open()
        return await self.store.retry_all_dead()

    async def cancel(self, job_id: UUID | str, *, by: str | None = None) -> CancelResult:
        """Cancel a job, queued or running, on any host.

        A queued job is cancelled at once (``CancelResult.CANCELLED``). A running job is
        marked (``cancelled_at``, ``cancelled_by``: ``by``, default ``user@host``) and
        its worker stops it within about a second: an async job is cancelled (its
        ``CancelledError`` may clean up, within a grace), a cpu_bound job's process is
        killed, a sync job sees ``taskq.current_job().cancel_requested`` turn True (a
        thread cannot be killed); the run then ends ``cancelled``, never retried
        (``REQUESTED``; ``ALREADY_REQUESTED`` if a cancel was asked for before). A job
        that already finished is left as it is: ``InvalidJobState`` says so."""
        job_uuid = parse_job_id(job_id)
        await self.open()
        found = await self.store.request_cancel([job_uuid], by=by or who())
        if job_uuid not in found:
            raise JobNotFound(f"no job with id {job_id}")
        result, state = found[job_uuid]
        if result is CancelResult.FINISHED:
            raise InvalidJobState(f"job {job_uuid} is already {state}: nothing changed")
        return result

    # -- queue and actor controls ----------------------------------------------------
    async def queues(self) -> builtins.list[QueueInfo]:
        """Every queue with its depth by state, oldest due wait, pause state and limits."""
        await self.open()
        return await self.store.queue_overview()

    async def pause_queue(self, name: str, *, by: str | None = None) -> None:
        """Stop every worker from claiming ``name``'s jobs (running ones finish; queued
        ones wait, no attempt charged). Stored, so it holds on every host and restart."""
        await self.open()
        await self.store.set_queue_paused(check_queue_name(name), True, by=by or who())

    async def resume_queue(self, name: str) -> None:
        await self.open()
        await self.store.set_queue_paused(check_queue_name(name), False)

    async def set_queue_limits(
        self, name: str, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        """Set the queue's fleet-wide limits to exactly these: at most ``concurrency``
        of its jobs running at once across all workers, at most ``rate`` ("N/second",
        "N/minute", "N/hour") starts in any such period. ``None`` is no limit of that
        kind; both ``None`` removes the queue's limits."""
        limits = make_limits(concurrency, rate)
        await self.open()
        await self.store.set_limits(QUEUE, check_queue_name(name), limits)

    async def set_actor_limits(
        self, actor: ActorRef, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        """``set_queue_limits`` for one actor's jobs, whatever queue they are on. An
        actor given by name must be one a worker recorded (or one with limits already,
        to change or clear them): another name is refused (``ActorNotFound``, nothing
        written)."""
        limits = make_limits(concurrency, rate)
        await self.open()
        name = await check_actor_known(self.store, actor)
        await self.store.set_limits(ACTOR, name, limits)

    async def limits(self) -> dict[tuple[str, str], Limits]:
        """Every limit, keyed by ("queue" | "actor", name)."""
        await self.open()
        return await self.store.get_limits()


class Operations(ABC):
    """The synchronous mirror of ``AsyncOperations``: each call runs the async one of
    ``async_client`` on the client's loop thread (``run``)."""

    @property
    @abstractmethod
    def async_client(self) -> AsyncOperations:
        """The async client whose calls this one runs."""

    @abstractmethod
    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the client's loop thread and return its result."""

    def get(self, job_id: UUID | str) -> Job:
        return self.run(self.async_client.get(job_id))

    def list(
        self,
        *,
        state: str | None = None,
        queue: str | None = None,
        tag: str | None = None,
        limit: int = 100,
    ) -> builtins.list[Job]:
        return self.run(self.async_client.list(state=state, queue=queue, tag=tag, limit=limit))

    def stats(self) -> dict[str, int]:
        return self.run(self.async_client.stats())

    def wait(self, job_id: UUID | str, *, timeout: float = 60.0, interval: float = 0.05) -> Job:
        return self.run(self.async_client.wait(job_id, timeout=timeout, interval=interval))

    def retry(self, job_id: UUID | str) -> None:
        self.run(self.async_client.retry(job_id))

    def retry_all_dead(self) -> int:
        return self.run(self.async_client.retry_all_dead())

    def cancel(self, job_id: UUID | str, *, by: str | None = None) -> CancelResult:
        return self.run(self.async_client.cancel(job_id, by=by))

    def queues(self) -> builtins.list[QueueInfo]:
        return self.run(self.async_client.queues())

    def pause_queue(self, name: str, *, by: str | None = None) -> None:
        self.run(self.async_client.pause_queue(name, by=by))

    def resume_queue(self, name: str) -> None:
        self.run(self.async_client.resume_queue(name))

    def set_queue_limits(
        self, name: str, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        self.run(self.async_client.set_queue_limits(name, concurrency, rate))

    def set_actor_limits(
        self, actor: ActorRef, concurrency: int | None = None, rate: Rate | str | None = None
    ) -> None:
        self.run(self.async_client.set_actor_limits(actor, concurrency, rate))

    def limits(self) -> dict[tuple[str, str], Limits]:
        return self.run(self.async_client.limits())
