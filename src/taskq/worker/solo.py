"""Running a job alone on this worker: the re-run after a blame it shared.

When a worker process dies of a cause that points at a job (taskq.blame) while it ran
several jobs, at most one of them did it; each is marked ``run_alone`` and re-run before
a second blame can poison it (docs/jobs.md, "Blame and poison"). ``Solo`` makes that run
alone: a ``run_alone`` job waits until no other job runs here, then runs with nothing
beside it; while one waits or runs, every other job this worker was about to start is
given back (uncharged) and the fetcher claims nothing (``claiming_allowed``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from ..events import JOB_WAITS_TO_RUN_ALONE
from ..jobs import ClaimedJob
from ..logs import get_logger

log = get_logger(__name__)


class Solo:
    def __init__(self) -> None:
        self._running = 0  # jobs running here now
        self._alone = 0  # run_alone jobs waiting or running
        self._changed = asyncio.Condition()

    @property
    def claiming_allowed(self) -> bool:
        return self._alone == 0

    def begin(self) -> bool:
        """A job not marked ``run_alone`` is about to run: True if it may (then call
        ``end`` when it is over), False when it must be given back. No lock, no context
        manager: this is every job's path; only ``run_alone`` jobs take ``turn``."""
        if self._alone:
            return False
        self._running += 1
        return True

    def end(self) -> bool:
        """The job ``begin`` let run is over; True if a ``run_alone`` job waits (or
        runs): then ``await wake()``."""
        self._running -= 1
        return self._alone > 0

    async def wake(self) -> None:
        """Let a waiting ``run_alone`` job check ``_running`` again (under the lock)."""
        async with self._changed:
            self._changed.notify_all()

    @asynccontextmanager
    async def turn(self, job: ClaimedJob) -> AsyncIterator[bool]:
        """Yield True when ``job`` may run now, False when it must be given back."""
        if not job.run_alone:
            if not self.begin():
                yield False
                return
            try:
                yield True
            finally:
                if self.end():
                    await self.wake()
            return
        self._alone += 1
        try:
            async with self._changed:
                if self._running:
                    log.event(JOB_WAITS_TO_RUN_ALONE, job=str(job.id), actor=job.actor)
                await self._changed.wait_for(lambda: self._running == 0)
                self._running += 1
            try:
                yield True
            finally:
                await self._finished()
        finally:
            self._alone -= 1

    async def _finished(self) -> None:
        async with self._changed:
            self._running -= 1
            self._changed.notify_all()
