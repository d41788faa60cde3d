"""The task supervisor: ``size`` consumer tasks, each death noticed and repaired.

One loop waits on every consumer task (and every pending restart) with
``asyncio.wait(FIRST_COMPLETED)``. A consumer that ends while the worker is not shutting
down died: a ``worker died`` line names its exception at once, the alive gauge dips, and
a replacement is started after the backoff of that consumer's own ``RestartPolicy``
(0.1 s doubling to 10 s, full jitter; reset by the first job a replacement finishes, or
a quiet minute), counted in ``taskq_pool_worker_restarts_total``. A consumer with more
than 10 deaths in 60 s gives up: it is not replaced (``consumer-gave-up``; the alive
gauge stays below the configured size), and its siblings run on -- one bad consumer
never trips the guard for the rest. When every consumer has given up, the crash-loop
guard trips: a critical line, and ``run`` raises ``CrashLoop`` so the worker stops
claiming, gives its jobs back and exits 3.

It is the ``consumers`` part of the worker (``lifecycle.Part``). Its shutdown (``stop``) is
never counted as a crash: idle consumers are cancelled at once, busy ones get ``grace``
seconds to finish their job (cut short by ``stop(hurry=True)``, a second signal), then
the rest are cancelled; a cancelled consumer gives its job back.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

from .. import metrics
from ..events import (
    CONSUMER_GAVE_UP,
    CONSUMER_RESTART_SCHEDULED,
    CONSUMER_RESTARTED,
    CRASH_LOOP_GUARD_TRIPPED,
    WORKER_DIED,
)
from ..exceptions import CrashLoop
from ..logs import get_logger
from ..restart import Recovered, RestartPolicy
from .consumer import Consumer

log = get_logger(__name__)


class TaskSupervisor:
    """The ``consumers`` part of a worker."""

    name = "consumers"
    stop_timeout = None  # bounded by ``grace``, then the rest are cancelled

    def __init__(
        self,
        size: int,
        spawn: Callable[[int, Callable[[], None]], Consumer],
        *,
        grace: float = 0.0,
        policy: Callable[[], RestartPolicy] = RestartPolicy,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.size = size
        self.grace = grace
        self._spawn_consumer = spawn
        # one policy per consumer index, kept across its replacements
        self.policies = {index: policy() for index in range(size)}
        self.gave_up: set[int] = set()  # indexes whose policy gave up: left down
        self._sleep = sleep
        self.members: dict[asyncio.Task[None], Consumer] = {}
        self._restarts: dict[asyncio.Task[None], int] = {}  # restart timers -> index
        self.restarts = 0
        self.stopping = False
        self._stop_requested = asyncio.Event()
        self._hurry = asyncio.Event()

    @property
    def alive(self) -> int:
        return len(self.members)

    def _spawn(self, index: int) -> None:
        policy = self.policies[index]
        consumer = self._spawn_consumer(
            index, functools.partial(policy.on_success, Recovered.FINISHED_A_JOB)
        )
        task = asyncio.create_task(consumer.run(), name=f"taskq-consumer-{index}")
        self.members[task] = consumer
        metrics.consumers_alive.set(len(self.members))

    async def start(self) -> None:
        """Start ``size`` consumers."""
        metrics.consumers_configured.set(self.size)
        for index in range(self.size):
            self._spawn(index)

    def stop(self, *, hurry: bool = False) -> None:
        """No more replacements; busy consumers get the grace (none when ``hurry``)."""
        self.stopping = True
        self._stop_requested.set()
        if hurry:
            self._hurry.set()

    async def run(self) -> None:
        """Supervise until ``stop``, then end the consumers; ``CrashLoop`` if it gave up."""
        try:
            if await self._supervise():
                raise CrashLoop(f"all {self.size} consumers kept dying; none is left")
            await self._wind_down()
        finally:
            for timer in self._restarts:
                timer.cancel()
            if self._restarts:
                await asyncio.gather(*self._restarts, return_exceptions=True)
            self._restarts.clear()
            await self._end_members()

    async def _supervise(self) -> bool:
        """Replace dead consumers until ``stop``; True when the crash-loop guard tripped."""
        stop_waiter = asyncio.create_task(self._wait_for_stop(), name="taskq-stop-wait")
        try:
            while not self.stopping:
                done, _ = await asyncio.wait(
                    {*self.members, *self._restarts, stop_waiter},
                    return_when=asyncio.FIRST_COMPLETED,
                )
                for task in done:
                    if task in self._restarts:
                        self._restarted(task)
                    elif task in self.members and self._died(task):
                        return True
            return False
        finally:
            stop_waiter.cancel()
            await asyncio.gather(stop_waiter, return_exceptions=True)

    async def _wait_for_stop(self) -> None:
        await self._stop_requested.wait()

    async def _restart_timer(self, delay: float) -> None:
        await self._sleep(delay)

    def _died(self, task: asyncio.Task[None]) -> bool:
        """A consumer ended; True when the crash-loop guard trips."""
        consumer = self.members.pop(task)
        metrics.consumers_alive.set(len(self.members))
        if self.stopping:
            _log_end_during_shutdown(task, consumer)
            return False
        if task.cancelled():
            reason = "CancelledError: cancelled from outside"
            exc: BaseException | None = None
        else:
            exc = task.exception()
            reason = f"{type(exc).__name__}: {exc}" if exc else "returned unexpectedly"
        log.event(
            WORKER_DIED,
            consumer=consumer.index,
            error=reason,
            alive=len(self.members),
            exc_info=exc,
        )
        policy = self.policies[consumer.index]
        decision = policy.on_failure()
        if decision.give_up:
            self.gave_up.add(consumer.index)
            log.event(
                CONSUMER_GAVE_UP,
                consumer=consumer.index,
                restarts_in_window=decision.recent,
                window_seconds=policy.burst_window,
                limit=policy.burst_limit,
                alive=len(self.members),
                note="not replaced; the worker exits when every consumer has given up",
            )
            if len(self.gave_up) < self.size:
                return False
            log.event(
                CRASH_LOOP_GUARD_TRIPPED,
                consumers=self.size,
                restarts_in_window=decision.recent,
                window_seconds=policy.burst_window,
                limit=policy.burst_limit,
                action="stop claiming, give jobs back, exit non-zero",
            )
            self.stopping = True
            return True
        log.event(
            CONSUMER_RESTART_SCHEDULED,
            consumer=consumer.index,
            delay=round(decision.delay, 4),
            attempt=decision.attempt,
            restarts_in_window=decision.recent,
        )
        timer = asyncio.create_task(self._restart_timer(decision.delay), name="taskq-restart-timer")
        self._restarts[timer] = consumer.index
        return False

    def _restarted(self, timer: asyncio.Task[None]) -> None:
        index = self._restarts.pop(timer)
        if self.stopping:
            return
        self.restarts += 1
        self._spawn(index)
        log.event(CONSUMER_RESTARTED, consumer=index, alive=len(self.members))

    async def _wind_down(self) -> None:
        """Cancel idle consumers, give busy ones ``grace`` seconds, then cancel the rest."""
        for task, consumer in list(self.members.items()):
            if not consumer.busy:
                task.cancel()
        busy = set(self.members)
        if busy and not self._hurry.is_set():
            hurry_waiter = asyncio.create_task(self._hurry.wait(), name="taskq-hurry-wait")
            deadline = asyncio.get_running_loop().time() + self.grace
            try:
                while busy and not self._hurry.is_set():
                    remaining = deadline - asyncio.get_running_loop().time()
                    if remaining <= 0:
                        break
                    done, _ = await asyncio.wait(
                        {*busy, hurry_waiter},
                        timeout=remaining,
                        return_when=asyncio.FIRST_COMPLETED,
                    )
                    busy -= done
            finally:
                hurry_waiter.cancel()
                await asyncio.gather(hurry_waiter, return_exceptions=True)

    async def _end_members(self) -> None:
        """Cancel the consumers still there (each gives its job back) and wait for them."""
        self.stopping = True
        for task in self.members:
            task.cancel()
        if self.members:
            await asyncio.wait(set(self.members))
        for task in list(self.members):
            self._died(task)


def _log_end_during_shutdown(task: asyncio.Task[None], consumer: Consumer) -> None:
    if task.cancelled():
        return  # expected: shutdown cancels consumers
    exc = task.exception()
    if exc is not None:
        log.event(
            WORKER_DIED,
            consumer=consumer.index,
            during="shutdown",
            error=f"{type(exc).__name__}: {exc}",
            exc_info=exc,
        )
