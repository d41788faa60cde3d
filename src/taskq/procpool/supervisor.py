"""The slot supervisor: the one owner of every slot's state (slot.py) and of its restarts.

Each slot has one task (owned here) that starts a process, waits for its initializers,
offers it as idle, and once someone retires it stops and reaps it and starts the next one
when ``RestartGate`` (restarts.py) allows: at once after a recycle, a timeout or a cancel;
after the slot's own backoff delay after a failure (a death, a failed initializer); never
while the breaker is open.

Its lifecycle is the pool's part (``ProcessPool``: ``lifecycle.Part``), in this order:
``start`` makes the slots' tasks in slot order and returns once each first process is
ready (or failed); ``run`` awaits every slot's task; ``stop(grace)`` retires every slot at
once (busy processes SIGTERM now, idle ones EOF), after which each task stops
its process (SIGKILL after ``grace``), reaps it, starts no other and ends.

Callers (the dispatcher) lease an idle slot with ``take_idle`` (or, when none is idle, queue
one job behind a busy one with ``take_queueable``), talk to its process with ``exchange``,
and end the job with ``job_survived`` or ``retire``.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.context import ForkServerContext, SpawnContext
from multiprocessing.process import BaseProcess
from typing import cast

from .. import metrics
from ..events import (
    PROCESS_POOL_INITIALIZER_FAILED,
    PROCESS_POOL_PROCESS_LOST,
    PROCESS_POOL_PROCESS_READY,
    PROCESS_POOL_RECYCLED,
    PROCESS_POOL_SLOT_ERROR,
    PROCESS_POOL_SUPERVISOR_DIED,
)
from ..logs import get_logger
from ..restart import Recovered
from . import causes, forkserver, process
from .breaker import PoolBreaker
from .changes import Changes
from .channel import Channel
from .config import PoolConfig
from .protocol import Died, Exchanged, InitFailed, Ready, Run, TimedOut
from .restarts import RestartGate, recycle_reason
from .slot import PIPELINE_DEPTH, Retirement, Slot, SlotState, new_reaped

log = get_logger(__name__)


class SlotSupervisor:
    def __init__(
        self,
        config: PoolConfig,
        breaker: PoolBreaker,
        changes: Changes,
        executor: ThreadPoolExecutor,
    ) -> None:
        self._config = config
        self._breaker = breaker
        self._changes = changes
        self._executor = executor
        self._ctx = cast(
            "ForkServerContext | SpawnContext", multiprocessing.get_context(config.start_method)
        )
        self.slots: list[Slot] = []
        self._idle: deque[Slot] = deque()
        self._tasks: list[asyncio.Task[None]] = []
        self.closing = False
        self._close_grace = config.kill_grace
        self.generation = 0  # processes started so far, all slots together
        self._gate = RestartGate(
            breaker,
            changes,
            closing=lambda: self.closing,
            processes_alive=lambda: self.processes_alive,
        )

    # -- read by the facade -----------------------------------------------------------

    @property
    def processes_alive(self) -> int:
        return sum(1 for s in self.slots if s.state is not SlotState.DOWN)

    @property
    def processes_ready(self) -> int:
        return sum(1 for s in self.slots if s.state in (SlotState.IDLE, SlotState.BUSY))

    @property
    def pids(self) -> list[int]:
        return [s.pid for s in self.slots if s.pid is not None and s.state is not SlotState.DOWN]

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Start every slot; returns once each first process is ready (or failed)."""
        forkserver.configure(self._ctx)
        loop = asyncio.get_running_loop()
        firsts: list[asyncio.Future[None]] = []
        for index in range(self._config.processes):
            slot = Slot(index=index, policy=self._config.restart_policy())
            self.slots.append(slot)
            first: asyncio.Future[None] = loop.create_future()
            firsts.append(first)
            task = asyncio.create_task(
                self._supervise(slot, first), name=f"taskq-procpool-slot-{index}"
            )
            task.add_done_callback(_supervisor_done)
            self._tasks.append(task)
        await asyncio.gather(*firsts)

    async def run(self) -> None:
        """Every slot's task, until each has stopped and reaped its last process (after
        ``stop``). Cancelled, it cancels them: each still reaps its process."""
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def stop(self, grace: float) -> None:
        """Retire every slot at once (busy ones get SIGTERM now, idle ones EOF); each
        slot's task then stops its process, SIGKILL after ``grace``. Never blocks; called
        again, a shorter grace holds for the processes not being stopped yet."""
        if self.closing:
            self._close_grace = min(grace, self._close_grace)
            return
        self.closing = True
        self._close_grace = grace
        for slot in self.slots:
            busy = slot.state in (SlotState.STARTING, SlotState.BUSY)
            if busy and slot.process is not None:
                process.terminate(slot.process)
            self.retire(slot, "closing", failure=False, hard=slot.state is not SlotState.IDLE)
        self._changes.notify()

    # -- the dispatcher's side ----------------------------------------------------------

    def take_idle(self) -> Slot | None:
        """Lease an idle slot (now busy), or None when none is idle."""
        if not self._idle:
            return None
        slot = self._idle.popleft()
        slot.state = SlotState.BUSY
        slot.pending = 1
        return slot

    def take_queueable(self) -> Slot | None:
        """A busy slot whose process may take one more job, to wait in its pipe behind the
        running one (so the process starts it without waiting for this side): one whose
        job runs alone there, that is not retiring, and whose process will not be
        recycled by count before that job (``max_tasks_per_child``). None if none."""
        limit = self._config.max_tasks_per_child
        for slot in self.slots:
            if (
                slot.state is SlotState.BUSY
                and slot.pending == 1
                and not slot.exclusive
                and slot.process is not None
                and not slot.retired.is_set()
                and (limit is None or slot.tasks_done + PIPELINE_DEPTH <= limit)
            ):
                slot.pending = PIPELINE_DEPTH
                return slot
        return None

    async def exchange(
        self,
        slot: Slot,
        message: Run,
        timeout: float | None,
        *,
        send: bool = True,
    ) -> Exchanged:
        """Send one job to the busy ``slot``'s process (``send=False``: it is in the pipe
        already; ``send=True``, a large job: written from a thread) and wait for the
        verdict, which the slot's channel reads on the event loop."""
        conn, channel = slot.conn, slot.channel
        assert conn is not None and channel is not None
        try:
            if send:
                written = asyncio.get_running_loop().run_in_executor(
                    self._executor, process.post, conn, message
                )
                slot.exchange = written
                if not await asyncio.shield(written):
                    return Exchanged(Died(), None)
            verdict = slot.exchange = channel.exchange(message.seq, timeout)
            return await asyncio.shield(verdict)
        except asyncio.CancelledError:
            # the caller gave up on the job (worker shutdown): its process must not go on
            self.retire(slot, "cancelled", failure=False, hard=True)
            raise

    def job_survived(self, slot: Slot) -> None:
        """The process finished a job alive: recycle it by count or memory, or offer it
        (unless a job waits in its pipe: the slot stays busy with that one)."""
        slot.tasks_done += 1
        slot.pending -= 1
        slot.exclusive = False
        slot.policy.on_success(Recovered.SURVIVED_A_JOB)
        if slot.drop_after_turn:  # it is starting a job nobody waits for any more
            self.retire(slot, "cancelled", failure=False, hard=True)
            return
        if slot.pending > 0:
            self._changes.notify()  # it may take one more job in its pipe
            return
        reason = recycle_reason(self._config, slot)
        if reason is not None:
            log.event(
                PROCESS_POOL_RECYCLED,
                reason=reason,
                pid=slot.pid,
                slot=slot.index,
                tasks_done=slot.tasks_done,
            )
            self.retire(slot, reason, failure=False, hard=False)
            return
        if slot.retired.is_set():  # retired while the job ran (close)
            return
        slot.state = SlotState.IDLE
        self._idle.append(slot)
        self._changes.notify()

    def retire(self, slot: Slot, reason: str, *, failure: bool, hard: bool) -> None:
        """The slot's current process must go; its task stops it and starts the next."""
        if slot.retired.is_set():
            return
        slot.retirement = Retirement(reason, failure, hard)
        slot.retired.set()

    # -- one slot's task ----------------------------------------------------------------

    async def _supervise(self, slot: Slot, first: asyncio.Future[None]) -> None:
        try:
            while not self.closing:
                try:
                    await self._one_life(slot, first)
                except Exception:
                    log.event(PROCESS_POOL_SLOT_ERROR, exc_info=True, slot=slot.index)
                    slot.retirement = Retirement("error", failure=True, hard=True)
                    slot.retired.set()
                    await self._stop(slot)
                _resolve(first)
                if self.closing:
                    break
                if await self._gate.pause(slot):
                    slot.policy = self._config.restart_policy()
        finally:
            await self._stop(slot)
            _resolve(first)

    async def _one_life(self, slot: Slot, first: asyncio.Future[None]) -> None:
        """Start one process in the slot, serve with it until it is retired, reap it."""
        if not await self._gate.may_start(held=lambda: _resolve(first)):
            return
        if await self._start_process(slot):
            _resolve(first)
            await slot.retired.wait()
        await self._stop(slot)

    async def _start_process(self, slot: Slot) -> bool:
        config, loop = self._config, asyncio.get_running_loop()
        slot.retirement, slot.tasks_done, slot.exchange, slot.channel = None, 0, None, None
        slot.pending, slot.turn, slot.drop_after_turn, slot.exclusive = 0, None, False, False
        slot.retired, slot.reaped = asyncio.Event(), new_reaped()
        slot.state = SlotState.STARTING
        self.generation += 1
        slot.generation += 1
        sys_path = [p for p in sys.path if isinstance(p, str)]
        spawned, conn = await loop.run_in_executor(
            self._executor,
            process.spawn,
            self._ctx,
            config.registry_ref,
            sys_path,
            config.env,
            config.nice,
        )
        slot.process, slot.conn, slot.pid = spawned, conn, spawned.pid
        metrics.process_pool_processes_alive.inc()
        loop.add_reader(spawned.sentinel, self._on_exit, slot, spawned)
        if self.closing:
            process.terminate(spawned)
        reply = await loop.run_in_executor(
            self._executor, process.wait_ready, conn, spawned, config.initializer_timeout
        )
        match reply:
            case Ready(memory_limit_mib=limit):
                slot.memory_limit_mib = limit
                slot.channel = Channel(conn, loop)
                slot.oom_counter = causes.OomCounter.for_pid(
                    spawned.pid or 0, root=config.cgroup_root
                )
                slot.state = SlotState.IDLE
                self._idle.append(slot)
                self._changes.notify()
                log.event(
                    PROCESS_POOL_PROCESS_READY,
                    pid=slot.pid,
                    slot=slot.index,
                    slot_generation=slot.generation,
                    pool_generation=self.generation,
                )
                return True
            case _ if self.closing:
                return False
            case InitFailed(traceback=text):
                await self._initializer_failed(slot, "raised", hard=False, traceback=text)
            case TimedOut():
                await self._initializer_failed(slot, "timeout", hard=True)
            case _:  # died, or said something else first
                await self._initializer_failed(slot, "died", hard=False)
        return False

    async def _initializer_failed(
        self, slot: Slot, how: causes.InitFailure, *, hard: bool, traceback: str | None = None
    ) -> None:
        self.retire(slot, "initializer", failure=True, hard=hard)
        await self._stop(slot)
        report = causes.initializer_failure(
            pid=slot.pid,
            exitcode=slot.reaped.result(),
            how=how,
            traceback=traceback,
            timeout=self._config.initializer_timeout,
        )
        log.event(
            PROCESS_POOL_INITIALIZER_FAILED,
            pid=slot.pid,
            slot=slot.index,
            slot_generation=slot.generation,
            pool_generation=self.generation,
            exit_code=report.exit_code,
            exit_signal=report.exit_signal,
            cause=report.cause,
            traceback=report.traceback,
        )
        self._breaker.record_break(report)

    def _on_exit(self, slot: Slot, exited: BaseProcess) -> None:
        """The sentinel of ``exited`` became readable: it exited."""
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(exited.sentinel)
        if slot.process is not exited or slot.state is SlotState.STARTING:
            return  # starting: the thread waiting for Ready sees the death itself
        if slot.state is SlotState.BUSY:
            if slot.channel is not None:  # what it wrote before it went, then Died
                slot.channel.end()
            return  # its job's verdict retires the slot
        with contextlib.suppress(ValueError):
            self._idle.remove(slot)
        log.event(
            PROCESS_POOL_PROCESS_LOST,
            pid=slot.pid,
            slot=slot.index,
            detail="the process died while idle; no job was running",
        )
        self.retire(slot, "died_idle", failure=True, hard=False)

    async def _stop(self, slot: Slot) -> None:
        """Stop and reap the slot's process (idempotent); record its exit code."""
        stopping, conn = slot.process, slot.conn
        if stopping is None:
            slot.state = SlotState.DOWN
            if not slot.reaped.done():
                slot.reaped.set_result(None)
            return
        slot.process = None
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(stopping.sentinel)
        with contextlib.suppress(ValueError):
            self._idle.remove(slot)
        talking = slot.exchange is not None and not slot.exchange.done()
        hard = talking or (slot.retirement is not None and slot.retirement.hard)
        channel = slot.channel
        if channel is not None and not hard:
            channel.detach()  # the pipe is closed from a thread below
        grace = self._close_grace if self.closing else self._config.kill_grace
        loop = asyncio.get_running_loop()
        exitcode = None
        try:
            exitcode = await asyncio.shield(
                loop.run_in_executor(
                    self._executor,
                    lambda: process.stop(stopping, None if hard else conn, hard=hard, grace=grace),
                )
            )
            if channel is not None:  # reaped: read what it wrote, then Died if no reply
                channel.end()
            if slot.exchange is not None:
                await asyncio.shield(slot.exchange)
        finally:
            if channel is not None:
                channel.end()
                slot.channel = None
            if conn is not None and not conn.closed:
                conn.close()
            slot.conn = None
            slot.state = SlotState.DOWN
            metrics.process_pool_processes_alive.dec()
            if not slot.reaped.done():
                slot.reaped.set_result(exitcode)
            self._changes.notify()


def _resolve(first: asyncio.Future[None]) -> None:
    if not first.done():
        first.set_result(None)


def _supervisor_done(task: asyncio.Task[None]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.event(PROCESS_POOL_SUPERVISOR_DIED, task=task.get_name(), exc_info=task.exception())
