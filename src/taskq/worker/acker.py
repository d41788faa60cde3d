"""Acknowledgements in batches: outcomes and give-backs go to the store together.

Consumers hand an outcome over with ``add`` (no await, no round trip) and move on.
The acker collects for ``linger`` seconds or up to ``max_batch`` and writes the lot as
ONE ``store.complete`` call (and one ``store.give_back`` for returned jobs). Whatever
accumulates while a write is in flight goes with the next one, so batches grow with
load by themselves.

Paced batches: outcomes that arrive at a few hundred to a few thousand a second (CPU-bound
jobs on a pool, short I/O jobs) would go out two to five at a time, and each ``complete``
costs Postgres about as much for one outcome as for twenty (on 2 ms CPU jobs, half its
CPU a job went to the acks' transactions; the CPU pool competes with it for the cores).
So while outcomes come at ``pace`` (outcomes a second, measured over the last batches)
fast enough to gather ``PACED_BATCH`` of them within ``MAX_LINGER``, a batch waits for
them: at most ``MAX_LINGER`` longer before a job's end is recorded, never longer than it
takes. Slower than that, waiting would hold outcomes for no company: the base linger.
Only outcomes of idempotent jobs wait: while the acker holds the outcome of a job that
must never run twice, it writes after the base linger (a worker killed in the window
leaves that job to the crash rules, which do not re-run it).

No company in sight, no wait: when the worker runs and holds no other job
(``in_flight``, the job buffer's count, is 0 when the acker wakes), no outcome can join
the batch within a linger, and it is written at once. A lone job's end (the last job of
a drain, a workflow's step that the next step waits for, a job whose caller waits on
its result) is recorded ~2 ms sooner.

When the store is unavailable the batch is kept and retried with backoff. Writes are
fenced by ``(id, attempt, worker_id)`` in the store, so re-sending a batch whose first
attempt did commit, or acknowledging a job whose lease another worker took over, changes
nothing.

It stops after the consumers (their last outcomes go with it): ``stop`` makes it write
what is left, retrying through an outage, for at most ``stop_timeout`` seconds; what
could not be written is logged (``acks-not-written``) and left to a rescuer.

A job's end is logged after its outcome is written, never before (``outcomes.announce``):
a worker that dies with outcomes in hand leaves no line that the store contradicts. A
batch that changed fewer rows than it had outcomes is checked job by job; an outcome the
store did not take is logged as ``job-end-not-written``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from uuid import UUID

from ..events import ACKS_FENCED_OUT, ACKS_NOT_WRITTEN
from ..exceptions import StoreError
from ..jobs import ClaimedJob, NotedOutcome, Outcome
from ..logs import get_logger
from ..store import Store
from .outage import StoreBackoff
from .outcomes import announce, not_written, was_written

log = get_logger(__name__)


FLUSH_TIMEOUT = 10.0  # seconds the last acknowledgements get at shutdown
LINGER = 0.002  # seconds every batch waits for company
PACED_BATCH = 8  # outcomes a batch waits for while they come fast enough ...
MAX_LINGER = 0.020  # ... to gather them in at most this long
_PACE_WEIGHT = 0.3  # weight of the newest batch in the measured pace
#: why an outcome's end was not logged as such (``job-end-not-written``)
FENCED_OUT = "fenced out: the job's lease was taken over and the crash rules ended this run"
NOT_ANSWERED = "the store did not answer before the worker stopped: the crash rules decide"


class Acker:
    name = "acker"
    stop_timeout = FLUSH_TIMEOUT

    def __init__(
        self,
        store: Store,
        worker_id: UUID,
        *,
        max_batch: int = 200,
        linger: float = LINGER,
        clock: Callable[[], float] = time.monotonic,
        in_flight: Callable[[], int] | None = None,
    ) -> None:
        self._store = store
        self._worker_id = worker_id
        self.max_batch = max_batch
        self.linger = linger
        self._clock = clock
        #: how many jobs the worker holds that may still end (None: unknown, always linger)
        self._in_flight = in_flight
        #: outcomes a second, over the last batches (0.0: none measured yet)
        self.pace = 0.0
        self._last_write: float | None = None  # when the last batch went out (the clock's)
        self._holds_non_idempotent = False  # a non-idempotent job's outcome waits to be written
        self._outcomes: list[Outcome] = []
        self._fanouts: list[Outcome] = []
        self._give_backs: list[tuple[UUID, int]] = []
        self._wake = asyncio.Event()
        self._closing = False
        self._backoff = StoreBackoff("acker")
        self.batches_written = 0
        self.fenced_out = 0

    @property
    def in_outage(self) -> bool:
        """True while its writes fail (the store does not answer)."""
        return self._backoff.in_outage

    @property
    def pending(self) -> int:
        return len(self._outcomes) + len(self._give_backs) + len(self._fanouts)

    def add(self, outcome: Outcome, *, idempotent: bool = False) -> None:
        """Write ``outcome`` with the next batch. ``idempotent``: its job may run again,
        so its outcome may wait for a paced batch (the module's docstring)."""
        if outcome.added:  # a workflow step's fan-out: written on its own (complete_fanout)
            self._fanouts.append(outcome)
        else:
            self._outcomes.append(outcome)
        if not idempotent:
            self._holds_non_idempotent = True
        self._wake.set()

    def linger_now(self) -> float:
        """How long the batch in hand waits for company (see the module's docstring)."""
        if self._in_flight is not None and self._in_flight() == 0:
            return 0.0  # no job left that could end within a linger
        wanted = PACED_BATCH - len(self._outcomes)
        if self._holds_non_idempotent or wanted <= 0 or self.pace <= 0.0:
            return self.linger
        wait = wanted / self.pace
        if wait > MAX_LINGER:  # too slow to gather them: no company worth the wait
            return self.linger
        return max(wait, self.linger)

    def _paced(self, written: int) -> None:
        """A batch of ``written`` outcomes went out: the pace they came at since the last."""
        now = self._clock()
        since, self._last_write = self._last_write, now
        if since is None or now <= since:
            return
        pace = written / (now - since)
        self.pace = pace if self.pace <= 0.0 else self.pace + _PACE_WEIGHT * (pace - self.pace)

    def give_back(self, jobs: list[ClaimedJob]) -> None:
        """Return claimed jobs to queued without charging their attempt."""
        if jobs:
            self._give_backs.extend((job.id, job.attempt) for job in jobs)
            self._wake.set()

    async def start(self) -> None:
        pass

    def stop(self, *, hurry: bool = False) -> None:
        """Write what is left, then end (``run`` returns)."""
        self._closing = True
        self._wake.set()

    async def run(self) -> None:
        """Write batches until ``stop`` and nothing is left."""
        try:
            await self._write_until_stopped()
        finally:
            if self.pending:
                log.event(
                    ACKS_NOT_WRITTEN,
                    outcomes=len(self._outcomes) + len(self._fanouts),
                    give_backs=len(self._give_backs),
                    note="their leases will expire and a rescuer will end them by the crash rules",
                )
                not_written(self._outcomes, NOT_ANSWERED)

    async def _announce_checked(self, outcomes: list[Outcome]) -> None:
        """Some of a batch were fenced out: log the noted ones as the store shows them."""
        for outcome in outcomes:
            if not isinstance(outcome, NotedOutcome) or outcome.note is None:
                continue
            try:
                written = was_written(outcome, await self._store.get_job(outcome.job_id))
            except StoreError:
                written = False
            if written:
                announce([outcome])
            else:
                not_written([outcome], FENCED_OUT)

    async def _write_until_stopped(self) -> None:
        while True:
            await self._wake.wait()
            if not self._closing and len(self._outcomes) < self.max_batch:
                linger = self.linger_now()
                if linger > 0.0:
                    await asyncio.sleep(linger)
            if not await self._write_once() and not self._closing:
                continue
            if not self.pending:
                if self._closing:
                    return
                self._wake.clear()

    async def _write_once(self) -> bool:
        """One batch of each kind; False (batch kept) when the store did not answer."""
        try:
            if self._give_backs:
                batch = self._give_backs[: self.max_batch]
                await self._store.give_back(self._worker_id, batch)
                del self._give_backs[: len(batch)]
            fenced_out = 0
            while self._fanouts:  # each with the steps it added, in one transaction
                outcome = self._fanouts[0]
                changed = await self._store.complete_fanout(self._worker_id, outcome, outcome.added)
                del self._fanouts[0]
                fenced_out += 1 - changed
                if changed:
                    announce([outcome])
                else:
                    await self._announce_checked([outcome])
            if self._outcomes:
                outcomes = self._outcomes[: self.max_batch]
                changed = await self._store.complete(self._worker_id, outcomes)
                del self._outcomes[: len(outcomes)]
                self._paced(len(outcomes))
                if not self._outcomes:
                    self._holds_non_idempotent = False
                fenced_out += len(outcomes) - changed
                if changed == len(outcomes):
                    announce(outcomes)
                else:
                    await self._announce_checked(outcomes)
            if fenced_out:
                self.fenced_out += fenced_out
                log.event(
                    ACKS_FENCED_OUT,
                    count=fenced_out,
                    note="those jobs' leases were taken over; nothing was changed",
                )
        except StoreError as exc:
            await asyncio.sleep(self._backoff.failed(exc))
            return False
        self._backoff.succeeded()
        self.batches_written += 1
        return True
