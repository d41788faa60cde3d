"""Running one job in the pool: admission, a slot, the exchange, and the verdict.

``Dispatcher.run`` checks the payload, asks the breaker, leases an idle slot from the
slot supervisor, sends the job and turns the verdict into a result or one of the errors
listed in the package docstring. A process that dies before it acknowledged the job
(``Started``) does not charge it: the job goes to another slot, once.

When no slot is idle, a small job (``PIPELINE_MAX_CHARS``) is sent to a busy process to
wait in its pipe behind the one job running there, so that process starts it the moment
it replies, without waiting for this side (the pool's "pipelining"; it never waits on
its parent while work is queued). Such a job is not running: it is not in
``running_jobs``, its timeout counts from its ``Started``, and if its process goes
before its turn (a death, a timeout, a cancel of the job before it) it was never taken:
it is sent again, uncharged, to an idle process. ``cancel`` kills
the process running a job on purpose (TERM, ``kill_grace``, KILL, reaped): that job
raises ``JobCancelled``, which is no break (no metric, the breaker does not count it)
and no failure of the slot (replaced at once, no backoff).
"""

from __future__ import annotations

import asyncio
import itertools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NoReturn

from ..context import JobContext, peek
from ..events import (
    PROCESS_POOL_BROKEN,
    PROCESS_POOL_JOB_CANCELLED,
    PROCESS_POOL_JOB_TIMED_OUT,
    PROCESS_POOL_PROCESS_LOST,
)
from ..exceptions import (
    BreakerOpen,
    JobCancelled,
    JobFailed,
    JobTimedOut,
    PayloadTooLarge,
    PayloadUndecodable,
    PoolClosed,
    ProcessDied,
    ResultDropped,
)
from ..logs import get_logger, job_fields
from . import causes, process
from .breaker import Admission, BreakerState, PoolBreaker
from .changes import Changes
from .config import PoolConfig
from .protocol import (
    Died,
    Exchanged,
    Garbled,
    Raised,
    ResultNotSent,
    Returned,
    Run,
    TimedOut,
    Undecodable,
)
from .slot import PIPELINE_DEPTH, Slot
from .supervisor import SlotSupervisor

log = get_logger(__name__)

#: a job whose arguments are at most this many characters may be queued behind a running
#: job (sent from the event loop: at most 64 KiB, which the pipe's buffer takes at once)
PIPELINE_MAX_CHARS = 16 * 1024


@dataclass(slots=True)
class Job:
    """One call of ``run``, and the facts of the process it was dispatched to."""

    actor: str
    args_json: str
    kwargs_json: str
    job_id: str | None
    attempt: int | None
    timeout: float | None
    # set at dispatch: the slot moves on to a new process before a death is reported
    slot: Slot | None = None
    reaped: asyncio.Future[int | None] | None = None
    pool_generation: int = 0  # processes the pool had started
    slot_generation: int = 0
    pid: int | None = None
    memory_limit_mib: int = -1
    oom_counter: causes.OomCounter | None = None
    oom_before: int | None = None
    context: JobContext | None = None  # taskq.current_job() of the caller, if any
    context_json: str | None = None
    cancelled: bool = False  # cancel() killed its process on purpose
    queued: bool = False  # waiting in a busy process's pipe for the job before it
    lost_in_queue: bool = False  # its process went before its turn: never taken
    turn: asyncio.Future[None] | None = None  # resolved once its verdict is acted on

    @property
    def small(self) -> bool:
        """Small enough to be sent from the event loop (``PIPELINE_MAX_CHARS``)."""
        size = len(self.args_json) + len(self.kwargs_json) + len(self.context_json or "")
        return size <= PIPELINE_MAX_CHARS

    def payload_bytes(self) -> int:
        return len(self.args_json.encode()) + len(self.kwargs_json.encode())


class Dispatcher:
    def __init__(
        self,
        config: PoolConfig,
        slots: SlotSupervisor,
        breaker: PoolBreaker,
        changes: Changes,
        executor: ThreadPoolExecutor,
    ) -> None:
        self._config = config
        self._slots = slots
        self._breaker = breaker
        self._changes = changes
        self._executor = executor
        self._seq = itertools.count(1)
        # a job running and one piped per process: more callers in ``_acquire`` would only
        # all wake at every change and all but one wait again (a herd at every job's end)
        self._admitted = asyncio.Semaphore(PIPELINE_DEPTH * config.processes)
        self.running: dict[str, Job] = {}  # job_id -> the job, while its process runs it
        self.queued: dict[str, Job] = {}  # job_id -> the job, while it waits in a pipe

    async def run(self, job: Job) -> str:
        self._check_payload(job)
        admission = self._breaker.admit(job.actor, job.job_id)
        if admission is Admission.REFUSED:
            raise BreakerOpen()
        probe = admission is Admission.PROBE
        job.context = peek()  # taskq.current_job() of the caller, whose meta changes come back
        job.context_json = None if job.context is None else job.context.to_json()
        may_queue = not probe and job.small
        settled = False  # the probe reached a verdict (a break re-opened the breaker itself)
        lost = False  # a process died after it was handed the job, before it took it
        try:
            async with self._admitted:
                while True:
                    slot, queued = await self._acquire(probe, may_queue)
                    try:
                        exchanged = await self._exchange(slot, job, queued)
                        if job.cancelled:
                            await self._cancelled(job)
                        if (
                            isinstance(exchanged.verdict, Died)
                            and exchanged.started is None
                            and not self._slots.closing
                        ):
                            if job.lost_in_queue:  # its process went before its turn
                                job.lost_in_queue, may_queue = False, False
                                continue
                            if not lost:  # not this job's doing: another slot
                                lost = True
                                self._lost_before_start(slot, job)
                                continue
                        settled = True
                        return await self._conclude(slot, job, exchanged, probe)
                    finally:
                        _turn_done(job)
        finally:
            if probe and not settled:
                self._breaker.probe_abandoned()

    async def cancel(self, job_id: str) -> bool:
        """Kill the process running ``job_id`` (TERM, ``kill_grace``, KILL) and reap it.

        False when no process is running that job (not dispatched yet, or finished). Once
        this returned True, the job's ``run`` raises ``JobCancelled``, even if its result
        arrived while the process was being killed. A job waiting in a busy process's pipe
        is stopped when its turn comes (the job before it runs on unharmed): this returns
        once that process is reaped."""
        job = self.running.get(job_id) or self.queued.get(job_id)
        if job is None or job.slot is None or job.reaped is None or job.cancelled:
            return False
        job.cancelled = True
        log.event(PROCESS_POOL_JOB_CANCELLED, job=job_id, actor=job.actor, pid=job.pid)
        if not job.queued:
            self._slots.retire(job.slot, "cancelled", failure=False, hard=True)
        await asyncio.shield(job.reaped)
        return True

    def _check_payload(self, job: Job) -> None:
        limit = self._config.max_payload_bytes
        if (len(job.args_json) + len(job.kwargs_json)) * 4 <= limit:  # UTF-8: <= 4 bytes/char
            return
        size = job.payload_bytes()
        if size > limit:
            raise PayloadTooLarge(
                f"payload of {job.actor!r} is {size} bytes, over the process "
                f"pool's limit of {limit} bytes"
            )

    async def _acquire(self, probe: bool, may_queue: bool) -> tuple[Slot, bool]:
        """An idle slot, or (``may_queue``, none idle) a busy one to queue behind: the
        slot, and whether the job is queued."""
        while True:
            if self._slots.closing:
                raise PoolClosed()
            if probe and self._breaker.state is BreakerState.OPEN:
                raise BreakerOpen("the process pool's breaker re-opened before the probe ran")
            if not probe and self._breaker.refusing:
                raise BreakerOpen()
            slot = self._slots.take_idle()
            if slot is not None:
                return slot, False
            if may_queue:
                slot = self._slots.take_queueable()
                if slot is not None:
                    return slot, True
            await self._changes.wait()

    async def _exchange(self, slot: Slot, job: Job, queued: bool) -> Exchanged:
        before = slot.turn  # the job queued behind waits until this one is concluded
        job.turn = slot.turn = asyncio.get_running_loop().create_future()
        job.slot, job.reaped, job.pid = slot, slot.reaped, slot.pid
        job.pool_generation, job.slot_generation = self._slots.generation, slot.generation
        job.memory_limit_mib, job.oom_counter = slot.memory_limit_mib, slot.oom_counter
        job.oom_before = slot.oom_counter.read() if slot.oom_counter is not None else None
        # the job's log context, which the child's records carry too: a job with a
        # ``current_job()`` context needs none, the child stamps its records from that
        fields = job_fields() if job.context_json is None else None
        message = Run(
            next(self._seq),
            job.actor,
            job.args_json,
            job.kwargs_json,
            self._config.result_limit,
            tuple(fields.items()) if fields else (),
            job.context_json,
        )
        # a small job is sent from here (a job queued behind it later cannot overtake
        # it); a large one from the exchange's thread, and nothing is queued behind it
        small = job.small
        if queued:
            if not await self._wait_turn(slot, job, message, before):
                return Exchanged(Died(), None)
        elif small:
            assert slot.conn is not None
            if not process.post(slot.conn, message):
                return Exchanged(Died(), None)  # its process died before it took the job
        else:
            slot.exclusive = True
        if job.job_id is not None:
            self.running[job.job_id] = job
        try:
            exchanged = await self._slots.exchange(slot, message, job.timeout, send=not small)
        finally:
            if job.job_id is not None and self.running.get(job.job_id) is job:
                del self.running[job.job_id]
        if exchanged.started is not None:
            job.memory_limit_mib = exchanged.started.memory_limit_mib
        return exchanged

    async def _wait_turn(
        self, slot: Slot, job: Job, message: Run, before: asyncio.Future[None] | None
    ) -> bool:
        """Put a queued job in its process's pipe and wait until the job before it is
        concluded. True when the process is taking it now; False when that process went
        first (``job.lost_in_queue``), or the job was cancelled while it waited (its
        process, which starts it now, is stopped: the job before it is done)."""
        sent_to = slot.process
        assert slot.conn is not None and sent_to is not None
        job.queued = True
        if job.job_id is not None:
            self.queued[job.job_id] = job
        posted = process.post(slot.conn, message)
        try:
            if posted and before is not None:
                await asyncio.shield(before)
        except asyncio.CancelledError:
            if slot.process is sent_to:  # the process would run it for nobody
                slot.drop_after_turn = True
            raise
        finally:
            job.queued = False
            if job.job_id is not None and self.queued.get(job.job_id) is job:
                del self.queued[job.job_id]
        if not posted or slot.process is not sent_to or slot.retired.is_set():
            job.lost_in_queue = True
            return False
        if job.cancelled:
            self._slots.retire(slot, "cancelled", failure=False, hard=True)
            return False
        return True

    async def _cancelled(self, job: Job) -> NoReturn:
        assert job.reaped is not None
        await asyncio.shield(job.reaped)  # gone before anyone may run the job again
        if self._slots.closing:
            raise PoolClosed("the process pool was closed while the job ran")
        raise JobCancelled(f"{job.actor} was cancelled; its process {job.pid} was killed")

    async def _conclude(self, slot: Slot, job: Job, exchanged: Exchanged, probe: bool) -> str:
        """Turn the verdict into the result, or raise; hand the slot back or retire it."""
        match exchanged.verdict:
            case Died():  # dying already: let it finish exiting so its status is its own
                self._slots.retire(slot, "died", failure=True, hard=False)
                _turn_done(job)
                await self._report_death(job)
            case TimedOut():
                self._slots.retire(slot, "timeout", failure=False, hard=True)
                _turn_done(job)
                log.event(
                    PROCESS_POOL_JOB_TIMED_OUT,
                    job=job.job_id,
                    actor=job.actor,
                    timeout=job.timeout,
                    pid=job.pid,
                )
                assert job.reaped is not None
                await asyncio.shield(job.reaped)  # gone before anyone may run the job again
                self._probe_verdict(probe)
                raise JobTimedOut(
                    f"{job.actor} ran past its timeout of {job.timeout}s; its process "
                    f"{job.pid} was killed and replaced"
                )
            case Garbled(detail=detail):
                self._slots.retire(slot, "protocol", failure=True, hard=True)
                _turn_done(job)
                self._probe_verdict(probe)
                raise JobFailed(f"pool process {job.pid}: {detail}", error_type="ProtocolError")
            case reply:
                # the process survived the job: the slot did real work
                self._slots.job_survived(slot)
                _turn_done(job)
                self._probe_verdict(probe)
                meta_json = None if isinstance(reply, Undecodable) else reply.meta_json
                if meta_json and job.context:
                    job.context.absorb(meta_json)
                return _result(reply)

    def _probe_verdict(self, probe: bool) -> None:
        if probe:  # a break re-opened the breaker itself, in record_break
            self._breaker.probe_succeeded()

    def _lost_before_start(self, slot: Slot, job: Job) -> None:
        log.event(
            PROCESS_POOL_PROCESS_LOST,
            pid=slot.pid,
            slot=slot.index,
            job=job.job_id,
            actor=job.actor,
            detail="the process died before it took the job; trying another one",
        )
        self._slots.retire(slot, "died", failure=True, hard=False)

    async def _report_death(self, job: Job) -> NoReturn:
        """The process running ``job`` died: name the cause, log, count, raise ProcessDied."""
        assert job.reaped is not None and job.slot is not None
        exitcode = await asyncio.shield(job.reaped)
        if self._slots.closing:
            raise PoolClosed("the process pool was closed while the job ran")
        loop = asyncio.get_running_loop()
        report = await loop.run_in_executor(
            self._executor,
            lambda: causes.job_death(
                pid=job.pid,
                exitcode=exitcode,
                actor=job.actor,
                counter=job.oom_counter,
                counter_before=job.oom_before,
            ),
        )
        log.event(
            PROCESS_POOL_BROKEN,
            job=job.job_id,
            actor=job.actor,
            attempt=job.attempt,
            payload_bytes=job.payload_bytes(),
            pool_generation=job.pool_generation,
            slot=job.slot.index,
            slot_generation=job.slot_generation,
            worker_memory_limit_mib=job.memory_limit_mib,
            recent_oom_kills=report.recent_oom_kills,
            exit_signal=report.exit_signal,
            exit_code=report.exit_code,
            pid=job.pid,
            cause=report.cause,
        )
        self._breaker.record_break(report)
        raise ProcessDied(
            report.cause,
            cause=report.cause,
            exit_code=report.exit_code,
            exit_signal=report.exit_signal,
            pid=job.pid,
            oom_kill=report.oom_kill,
        )


def _turn_done(job: Job) -> None:
    """The job's verdict is acted on: the job queued behind it on its slot may go on."""
    if job.turn is not None and not job.turn.done():
        job.turn.set_result(None)


def _result(reply: object) -> str:
    """A reply of a job whose process lived on: its result, or the error it stands for."""
    match reply:
        case Returned(result_json=result_json):
            return result_json
        case Raised(error_type=error_type, message=message, traceback=remote_tb):
            raise JobFailed(
                remote_tb.rstrip(),
                error_type=error_type,
                error_message=message,
                remote_traceback=remote_tb,
            )
        case ResultNotSent(reason=reason):
            raise ResultDropped(reason)
        case Undecodable(message=message):
            raise PayloadUndecodable(message)
    raise AssertionError(f"not a job reply: {reply!r}")  # pragma: no cover
