"""One consumer: take a claimed job, run it, hand the outcome to the acker, repeat.

A worker runs ``max_concurrency`` consumers under the task supervisor. Job failures
never kill a consumer (they become outcomes), nor do middleware hooks that raise (they
are logged); what kills one is a cancellation from outside or a bug in taskq. Whatever
kills it, the job it held is not lost (``finally``): acknowledged if its outcome was
known, otherwise given back without charging the attempt.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..jobs import ClaimedJob, Outcome
from .acker import Acker
from .buffer import JobBuffer
from .middleware import MiddlewareChain
from .runners import Executor


class Consumer:
    def __init__(
        self,
        index: int,
        *,
        buffer: JobBuffer,
        executor: Executor,
        acker: Acker,
        middleware: MiddlewareChain,
        stopping: Callable[[], bool],
        on_success: Callable[[], None] | None,
    ) -> None:
        self.index = index
        self._buffer = buffer
        self._executor = executor
        self._acker = acker
        self._middleware = middleware
        self._stopping = stopping
        self._on_success = on_success
        self.held: ClaimedJob | None = None  # the job this consumer runs (the worker's view)
        self._outcome: Outcome | None = None
        self._ran = False

    @property
    def busy(self) -> bool:
        return self.held is not None

    async def run(self) -> None:
        get, execute, buffer, acker = (
            self._buffer.get,
            self._executor.execute,
            self._buffer,
            self._acker,
        )
        perf_counter = time.perf_counter
        middleware = self._middleware if self._middleware else None  # asked once, not twice a job
        try:
            while not self._stopping():
                job = await get()
                self.held, self._outcome, self._ran = job, None, False
                if middleware is not None:
                    middleware.before_job(job)
                started = perf_counter()
                outcome = await execute(job)
                duration = perf_counter() - started
                self._outcome, self._ran = outcome, True
                if middleware is not None:
                    middleware.after_job(job, outcome)
                if outcome is None:
                    acker.give_back([job])
                else:
                    acker.add(outcome, idempotent=job.idempotent)
                self.held = None
                buffer.done(duration, job)
                if self._on_success is not None:
                    self._on_success()
                    self._on_success = None  # only the first job resets the backoff
        finally:
            self._salvage()

    def _salvage(self) -> None:
        """The consumer is ending while holding a job: do not lose it."""
        job = self.held
        if job is None:
            return
        self.held = None
        if self._ran and self._outcome is not None:
            self._acker.add(self._outcome, idempotent=job.idempotent)
        else:
            self._acker.give_back([job])
        self._buffer.done(job=job)
