"""The async facade of the CPU process pool: slots, their supervisors, and ``run``.

Each slot has one supervisor task (owned by the pool, awaited by ``close``) that starts
the slot's process, waits for its initializers, offers it to ``run``, and replaces it when
someone retires it: a death, a timeout, a recycle, a cancelled job, ``close``. ``run``
leases an idle slot, talks to its process from a pool thread, and turns the verdict into a
result or one of the exceptions in the package docstring. Replacement delays come from one
``RestartPolicy`` per slot; breaks feed the pool's ``Breaker``.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.context import ForkServerContext, SpawnContext
from pathlib import Path
from typing import Any, NoReturn, cast
from uuid import UUID

from .. import metrics
from ..exceptions import (
    BreakerOpen,
    ConfigError,
    JobFailed,
    JobTimedOut,
    PayloadTooLarge,
    PayloadUndecodable,
    PoolClosed,
    ProcessDied,
)
from ..logs import get_logger
from ..registry import Registry, load_registry
from ..restart import RestartPolicy
from . import causes
from . import slot as slots
from .breaker import Admission, Breaker, BreakerState
from .slot import Slot, SlotState

log = get_logger(__name__)

START_METHODS = ("forkserver", "spawn")
_BREAKER_RECHECK = 0.25  # seconds between breaker checks of a slot waiting to restart


@dataclass(slots=True)
class _Job:
    actor: str
    args_json: str
    kwargs_json: str
    job_id: str | None
    attempt: int | None
    timeout: float | None
    # set at dispatch: the slot's process may be replaced before a death is reported
    pool_generation: int = 0  # processes the pool had started
    slot_generation: int = 0
    pid: int | None = None

    def payload_bytes(self) -> int:
        return len(self.args_json.encode()) + len(self.kwargs_json.encode())


class ProcessPool:
    """A pool of processes for ``cpu_bound`` actors where one death fails one job."""

    def __init__(
        self,
        registry_ref: str,
        size: int | None = None,
        max_tasks_per_child: int | None = 1000,
        max_memory_per_child_mib: int | None = None,
        max_payload_bytes: int = 64 * 1024 * 1024,
        start_method: str = "forkserver",
        breaker_threshold: int = 5,
        breaker_window: float = 60.0,
        breaker_cooldown: float = 30.0,
        *,
        max_result_bytes: int | None = None,
        initializer_timeout: float = 60.0,
        kill_grace: float = 1.0,
        env: Mapping[str, str] | None = None,
        restart_policy: Callable[[], RestartPolicy] | None = None,
        clock: Callable[[], float] = time.monotonic,
        cgroup_root: Path = causes.CGROUP_ROOT,
    ) -> None:
        if start_method not in START_METHODS:
            raise ConfigError(
                f"process pool start_method must be one of {START_METHODS}, got "
                f"{start_method!r} (never fork: the worker has threads and "
                "database connections)"
            )
        size = os.cpu_count() or 1 if size is None else size
        if not isinstance(size, int) or size < 1:
            raise ConfigError(f"process pool size must be an integer >= 1, got {size!r}")
        for name, value in (
            ("max_tasks_per_child", max_tasks_per_child),
            ("max_memory_per_child_mib", max_memory_per_child_mib),
        ):
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ConfigError(f"process pool {name} must be None or an integer >= 0")
        if max_payload_bytes < 1 or (max_result_bytes is not None and max_result_bytes < 1):
            raise ConfigError("process pool payload and result limits must be >= 1 byte")
        if initializer_timeout <= 0 or kill_grace < 0:
            raise ConfigError("process pool initializer_timeout must be > 0, kill_grace >= 0")
        self.registry_ref = registry_ref
        self.size = size
        self.max_tasks_per_child = max_tasks_per_child or None
        self.max_memory_per_child_mib = max_memory_per_child_mib or None
        self.max_payload_bytes = max_payload_bytes
        self.max_result_bytes = max_result_bytes or max_payload_bytes
        self.start_method = start_method
        self.initializer_timeout = initializer_timeout
        self.kill_grace = kill_grace
        self._env = dict(env or {})
        self._new_policy = restart_policy or RestartPolicy
        self._breaker = Breaker(
            threshold=breaker_threshold,
            window=breaker_window,
            cooldown=breaker_cooldown,
            clock=clock,
        )
        self._cgroup_root = cgroup_root
        self._ctx = cast(
            "ForkServerContext | SpawnContext", multiprocessing.get_context(start_method)
        )
        self._registry: Registry | None = None
        self._slots: list[Slot] = []
        self._idle: deque[Slot] = deque()
        self._supervisors: list[asyncio.Task[None]] = []
        self._executor: ThreadPoolExecutor | None = None
        self._changed = asyncio.Event()
        self._closed = asyncio.Event()
        self._closing = False
        self._close_grace = kill_grace
        self._started = False
        self._breaker_gauge_on = False
        self._seq = 0
        self._running: dict[str, int] = {}  # job_id -> pid
        self.generation = 0  # processes started so far, all slots together

    # -- public state ---------------------------------------------------------------

    @property
    def breaker_open(self) -> bool:
        """True while cpu jobs should stay queued (open, or half-open with its probe out)."""
        return self._breaker.refusing

    @property
    def breaker_state(self) -> BreakerState:
        return self._breaker.state

    @property
    def paused_actors(self) -> list[str]:
        """Names of the registry's cpu_bound actors while the breaker refuses work."""
        if not self.breaker_open or self._registry is None:
            return []
        return [actor.name for actor in self._registry if actor.cpu_bound]

    @property
    def processes_alive(self) -> int:
        return sum(1 for s in self._slots if s.state is not SlotState.DOWN)

    @property
    def processes_ready(self) -> int:
        """Processes past their initializers (idle or running a job)."""
        return sum(1 for s in self._slots if s.state in (SlotState.IDLE, SlotState.BUSY))

    @property
    def pids(self) -> list[int]:
        return [s.pid for s in self._slots if s.pid is not None and s.state is not SlotState.DOWN]

    @property
    def running_jobs(self) -> dict[str, int]:
        """``job_id -> pid`` of every job running now (jobs given a ``job_id``)."""
        return dict(self._running)

    def slot_generations(self) -> list[int]:
        return [s.generation for s in self._slots]

    # -- lifecycle ------------------------------------------------------------------

    async def start(self) -> None:
        """Start every slot's process; returns once each ran its initializers (or failed)."""
        if self._started:
            return
        if self._closing:
            raise PoolClosed()
        self._registry = load_registry(self.registry_ref)  # a clear error here, not in a child
        if self.start_method == "forkserver":
            self._ctx.set_forkserver_preload(["taskq.procpool.child"])
        self._executor = ThreadPoolExecutor(
            max_workers=2 * self.size + 2, thread_name_prefix="taskq-procpool"
        )
        self._started = True
        first_attempts: list[asyncio.Future[None]] = []
        loop = asyncio.get_running_loop()
        for index in range(self.size):
            slot = Slot(index=index, policy=self._new_policy())
            self._slots.append(slot)
            first = loop.create_future()
            first_attempts.append(first)
            task = asyncio.create_task(
                self._supervise(slot, first), name=f"taskq-procpool-slot-{index}"
            )
            task.add_done_callback(self._supervisor_done)
            self._supervisors.append(task)
        await asyncio.gather(*first_attempts)

    async def close(self, grace: float = 5.0) -> None:
        """Stop every process (TERM, ``grace``, KILL) and reap it. Idempotent."""
        if self._closing:
            await self._closed.wait()
            return
        self._closing = True
        self._close_grace = grace
        for slot in self._slots:
            if slot.state in (SlotState.STARTING, SlotState.BUSY) and slot.process is not None:
                slots._signal(slot.process, "terminate")
            slot.retire("closing", failure=False, hard=slot.state is not SlotState.IDLE)
        self._notify()
        try:
            if self._supervisors:
                await asyncio.gather(*self._supervisors, return_exceptions=True)
        finally:
            if self._executor is not None:
                await asyncio.to_thread(self._executor.shutdown, True)
            if self._breaker_gauge_on:
                metrics.process_pool_breaker_open.dec()
                self._breaker_gauge_on = False
            self._closed.set()

    async def __aenter__(self) -> ProcessPool:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # -- running a job --------------------------------------------------------------

    async def run(
        self,
        actor_name: str,
        args_json: str,
        kwargs_json: str,
        *,
        timeout: float | None = None,
        job_id: UUID | str | None = None,
        attempt: int | None = None,
    ) -> str:
        """Run one job in a pool process; return its result as JSON text."""
        if not self._started or self._closing:
            raise PoolClosed("the process pool is not running")
        job = _Job(
            actor_name,
            args_json,
            kwargs_json,
            None if job_id is None else str(job_id),
            attempt,
            timeout,
        )
        self._check_payload(job)
        admission = self._breaker.admit()
        if admission is Admission.REFUSED:
            raise BreakerOpen()
        probe = admission is Admission.PROBE
        if probe:
            log.warning("process_pool_breaker_half_open", job=actor_name, job_id=job.job_id)
            self._notify()
        verdict = False
        try:
            for try_number in (1, 2):
                slot = await self._acquire(probe)
                outcome, started = await self._exchange(slot, job)
                if outcome[0] == "died" and not started and try_number == 1 and not self._closing:
                    self._lost_before_start(slot, job)  # not this job's doing: another slot
                    continue
                verdict = True
                return await self._conclude(slot, job, outcome, probe)
            raise AssertionError("unreachable")  # pragma: no cover
        finally:
            if probe and not verdict:
                self._breaker.probe_abandoned()
                self._notify()

    def _check_payload(self, job: _Job) -> None:
        chars = len(job.args_json) + len(job.kwargs_json)
        if chars * 4 <= self.max_payload_bytes:  # UTF-8 needs at most 4 bytes a character
            return
        size = job.payload_bytes()
        if size > self.max_payload_bytes:
            raise PayloadTooLarge(
                f"payload of {job.actor!r} is {size} bytes, over the process "
                f"pool's limit of {self.max_payload_bytes} bytes"
            )

    async def _acquire(self, probe: bool) -> Slot:
        while True:
            if self._closing:
                raise PoolClosed()
            state = self._breaker.state
            if probe and state is BreakerState.OPEN:
                raise BreakerOpen("the process pool's breaker re-opened before the probe ran")
            if not probe and self._breaker.refusing:
                raise BreakerOpen()
            if self._idle:
                slot = self._idle.popleft()
                slot.state = SlotState.BUSY
                return slot
            await self._wait_changed(None)

    async def _exchange(self, slot: Slot, job: _Job) -> tuple[tuple[Any, ...], list[int]]:
        assert slot.conn is not None and slot.process is not None and self._executor is not None
        self._seq += 1
        job.pool_generation, job.slot_generation, job.pid = (
            self.generation,
            slot.generation,
            slot.pid,
        )
        message = (
            "run",
            self._seq,
            job.actor,
            job.args_json,
            job.kwargs_json,
            self.max_result_bytes,
        )
        started: list[int] = []
        slot.oom_before = slot.oom_counter.read() if slot.oom_counter is not None else None
        if job.job_id is not None and slot.pid is not None:
            self._running[job.job_id] = slot.pid
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(
            self._executor, slots.exchange, slot.conn, slot.process, message, job.timeout, started
        )
        slot.exchange = future
        try:
            outcome = await asyncio.shield(future)
        except asyncio.CancelledError:
            # the caller gave up on the job (worker shutdown): its process must not go on
            slot.retire("cancelled", failure=False, hard=True)
            raise
        finally:
            if job.job_id is not None:
                self._running.pop(job.job_id, None)
        if started:
            slot.memory_limit_mib = started[0]
        return outcome, started

    async def _conclude(self, slot: Slot, job: _Job, outcome: tuple[Any, ...], probe: bool) -> str:
        """Turn the child's reply into the result, or raise; hand the slot back or retire it."""
        tag = outcome[0]
        if tag == "died":  # dying already: let it finish exiting so its status is its own
            slot.retire("died", failure=True, hard=False)
            await self._report_break(slot, job)
        if tag == "timeout":
            slot.retire("timeout", failure=False, hard=True)
            log.warning(
                "process_pool_job_timed_out",
                job=job.actor,
                job_id=job.job_id,
                timeout=job.timeout,
                pid=job.pid,
            )
            await slot.reaped.wait()  # gone before anyone may run the job again
            self._probe_verdict(probe, broke=False)
            raise JobTimedOut(
                f"{job.actor} ran past its timeout of {job.timeout}s; its process "
                f"{job.pid} was killed and replaced"
            )
        # the process survived the job: the slot did real work
        slot.tasks_done += 1
        slot.policy.on_success()
        self._probe_verdict(probe, broke=False)
        self._after_job(slot)
        if tag == "ok":
            return str(outcome[2])
        if tag == "error":
            _tag, _seq, error_type, error_message, remote_tb = outcome
            raise JobFailed(
                remote_tb.rstrip(),
                error_type=error_type,
                error_message=error_message,
                remote_traceback=remote_tb,
            )
        if tag == "result_error":
            raise JobFailed(outcome[2], error_type="ResultError", error_message=outcome[2])
        if tag == "undecodable":
            raise PayloadUndecodable(outcome[2])
        raise JobFailed(
            f"unexpected reply from pool process {slot.pid}: {tag!r}", error_type="ProtocolError"
        )

    def _after_job(self, slot: Slot) -> None:
        """Recycle by task count or memory between jobs; otherwise hand the slot back."""
        reason = None
        if self.max_tasks_per_child is not None and slot.tasks_done >= self.max_tasks_per_child:
            reason = "max_tasks"
        elif self.max_memory_per_child_mib is not None and slot.pid is not None:
            rss = slots.rss_mib(slot.pid)
            if rss is not None and rss > self.max_memory_per_child_mib:
                reason = "max_memory"
        if reason is not None:
            metrics.process_pool_recycles.labels(reason=reason).inc()
            log.info(
                "process_pool_recycled",
                reason=reason,
                pid=slot.pid,
                slot=slot.index,
                tasks_done=slot.tasks_done,
            )
            slot.retire(reason, failure=False, hard=False)
            return
        if slot.retired.is_set():  # retired while the job ran (close)
            return
        slot.state = SlotState.IDLE
        self._idle.append(slot)
        self._notify()

    def _probe_verdict(self, probe: bool, *, broke: bool) -> None:
        if not probe:
            return
        if broke:
            return  # record_break already re-opened the breaker
        self._breaker.probe_succeeded()
        log.warning("process_pool_breaker_closed")
        self._set_breaker_gauge(False)
        self._notify()

    def _lost_before_start(self, slot: Slot, job: _Job) -> None:
        log.warning(
            "process_pool_process_lost",
            pid=slot.pid,
            slot=slot.index,
            job=job.actor,
            job_id=job.job_id,
            detail="the process died before it took the job; trying another one",
        )
        slot.retire("died", failure=True, hard=False)

    async def _report_break(self, slot: Slot, job: _Job) -> NoReturn:
        """The process running ``job`` died: name the cause, log, count, raise ProcessDied."""
        await slot.reaped.wait()
        if self._closing:
            raise PoolClosed("the process pool was closed while the job ran")
        # read the dead process's facts before any await: the slot moves on to a new one
        exitcode, memory_limit_mib = slot.exitcode, slot.memory_limit_mib
        counter, counter_before = slot.oom_counter, slot.oom_before
        exit_code, exit_signal = causes.exit_status(exitcode)
        oom_delta, oom_source = await self._oom_kills(counter, counter_before)
        from_cgroup = oom_source != "dmesg"
        cause = causes.describe_death(
            pid=job.pid,
            exitcode=exitcode,
            actor=job.actor,
            oom_kills=oom_delta if from_cgroup else None,
            oom_source=oom_source,
        )
        if not from_cgroup and oom_delta and exit_signal == "SIGKILL":
            cause += f" (possibly an OOM kill: dmesg shows {oom_delta} recent OOM kills)"
        label = causes.cause_label(exitcode, oom_delta if from_cgroup else None)
        metrics.process_pool_breaks.labels(cause=label).inc()
        log.error(
            "process_pool_broken",
            job=job.actor,
            job_id=job.job_id,
            attempt=job.attempt,
            payload_bytes=job.payload_bytes(),
            pool_generation=job.pool_generation,
            slot=slot.index,
            slot_generation=job.slot_generation,
            worker_memory_limit_mib=memory_limit_mib,
            recent_oom_kills=-1 if oom_delta is None else oom_delta,
            exit_signal=exit_signal,
            exit_code=exit_code,
            pid=job.pid,
            cause=cause,
        )
        self._record_break(cause)
        raise ProcessDied(
            cause, cause=cause, exit_code=exit_code, exit_signal=exit_signal, pid=job.pid
        )

    async def _oom_kills(
        self, counter: causes.OomCounter | None, before: int | None
    ) -> tuple[int | None, str]:
        """OOM kills since the job started (cgroup counter), else recent ones (dmesg)."""
        if counter is not None and before is not None:
            after = counter.read()
            if after is not None:
                return after - before, counter.path.name
        loop = asyncio.get_running_loop()
        found = await loop.run_in_executor(self._executor, causes.dmesg_oom_kills)
        return (None, "none") if found < 0 else (found, "dmesg")

    def _record_break(self, cause: str) -> None:
        if self._breaker.record_break():
            log.critical(
                "process_pool_breaker_open",
                breaks=self._breaker.recent_breaks,
                threshold=self._breaker.threshold,
                window=self._breaker.window,
                cooldown=self._breaker.cooldown,
                last_cause=cause,
                paused_actors=self._cpu_actor_names(),
            )
            self._set_breaker_gauge(True)
        self._notify()

    def _cpu_actor_names(self) -> list[str]:
        return [] if self._registry is None else [a.name for a in self._registry if a.cpu_bound]

    def _set_breaker_gauge(self, on: bool) -> None:
        if on and not self._breaker_gauge_on:
            metrics.process_pool_breaker_open.inc()
        elif not on and self._breaker_gauge_on:
            metrics.process_pool_breaker_open.dec()
        self._breaker_gauge_on = on

    # -- the slot supervisor --------------------------------------------------------

    async def _supervise(self, slot: Slot, first: asyncio.Future[None]) -> None:
        try:
            while not self._closing:
                try:
                    await self._one_life(slot, first)
                except Exception:
                    log.exception("process_pool_slot_error", slot=slot.index)
                    await self._stop(slot)
                    slot.retire_failure = True
                if not first.done():
                    first.set_result(None)
                if self._closing:
                    break
                await self._pause_before_restart(slot)
        finally:
            await self._stop(slot)
            if not first.done():
                first.set_result(None)

    async def _one_life(self, slot: Slot, first: asyncio.Future[None]) -> None:
        """Start one process in the slot, serve with it until it is retired, reap it."""
        if not await self._may_start(first):
            return
        if await self._start_process(slot):
            if not first.done():
                first.set_result(None)
            await slot.retired.wait()
        await self._stop(slot)

    async def _may_start(self, first: asyncio.Future[None]) -> bool:
        """Wait while the breaker holds restarts back; half-open lets one process start."""
        while not self._closing:
            state = self._breaker.state
            if state is BreakerState.CLOSED or (
                state is BreakerState.HALF_OPEN and self.processes_alive == 0
            ):
                return True
            if not first.done():
                first.set_result(None)  # start() does not wait for the breaker
            await self._wait_changed(_BREAKER_RECHECK)
        return False

    async def _start_process(self, slot: Slot) -> bool:
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        slot.fresh_process()
        slot.state = SlotState.STARTING
        self.generation += 1
        slot.generation += 1
        sys_path = [p for p in sys.path if isinstance(p, str)]
        process, conn = await loop.run_in_executor(
            self._executor, slots.spawn, self._ctx, self.registry_ref, sys_path, self._env
        )
        slot.process, slot.conn, slot.pid = process, conn, process.pid
        metrics.process_pool_processes_alive.inc()
        loop.add_reader(process.sentinel, self._on_exit, slot, process)
        if self._closing:
            slots._signal(process, "terminate")
        reply = await loop.run_in_executor(
            self._executor, slots.wait_ready, conn, process, self.initializer_timeout
        )
        if reply[0] == "ready":
            slot.memory_limit_mib = int(reply[2])
            slot.oom_counter = causes.OomCounter.for_pid(process.pid or 0, root=self._cgroup_root)
            slot.state = SlotState.IDLE
            self._idle.append(slot)
            self._notify()
            log.info(
                "process_pool_process_ready",
                pid=slot.pid,
                slot=slot.index,
                slot_generation=slot.generation,
                pool_generation=self.generation,
            )
            return True
        if self._closing:
            return False
        await self._initializer_failed(slot, reply)
        return False

    async def _initializer_failed(self, slot: Slot, reply: tuple[Any, ...]) -> None:
        slot.retire("initializer", failure=True, hard=reply[0] == "timeout")
        await self._stop(slot)
        exit_code, exit_signal = causes.exit_status(slot.exitcode)
        traceback_text = None
        if reply[0] == "init_failed":
            label, traceback_text = "initializer_failed", reply[1]
            last_line = traceback_text.rstrip().splitlines()[-1] if traceback_text else ""
            cause = f"process {slot.pid}: an initializer raised {last_line}"
        elif reply[0] == "timeout":
            label = "initializer_timeout"
            cause = (
                f"process {slot.pid}: the initializers did not finish within "
                f"{self.initializer_timeout}s; killed"
            )
        else:
            label = causes.cause_label(slot.exitcode, None)
            cause = causes.describe_death(
                pid=slot.pid, exitcode=slot.exitcode, actor="its initializers", oom_kills=None
            )
        metrics.process_pool_breaks.labels(cause=label).inc()
        log.error(
            "process_pool_initializer_failed",
            pid=slot.pid,
            slot=slot.index,
            slot_generation=slot.generation,
            pool_generation=self.generation,
            exit_code=exit_code,
            exit_signal=exit_signal,
            cause=cause,
            traceback=traceback_text,
        )
        self._record_break(cause)

    def _on_exit(self, slot: Slot, process: Any) -> None:
        """The sentinel of ``process`` became readable: it exited."""
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(process.sentinel)
        if slot.process is not process or slot.state is not SlotState.IDLE:
            return  # starting or busy: the waiting thread sees the death itself
        with contextlib.suppress(ValueError):
            self._idle.remove(slot)
        log.warning(
            "process_pool_process_lost",
            pid=slot.pid,
            slot=slot.index,
            detail="the process died while idle; no job was running",
        )
        slot.retire("died_idle", failure=True, hard=False)

    async def _stop(self, slot: Slot) -> None:
        """Stop and reap the slot's process (idempotent); record its exit code."""
        process, conn = slot.process, slot.conn
        if process is None:
            slot.state = SlotState.DOWN
            slot.reaped.set()
            return
        slot.process = None
        with contextlib.suppress(ValueError, OSError):
            asyncio.get_running_loop().remove_reader(process.sentinel)
        with contextlib.suppress(ValueError):
            self._idle.remove(slot)
        if slot.exchange is not None and not slot.retire_hard and not slot.exchange.done():
            slot.retire_hard = True
        hard = slot.retire_hard
        grace = self._close_grace if self._closing else self.kill_grace
        assert self._executor is not None
        loop = asyncio.get_running_loop()
        try:
            slot.exitcode = await asyncio.shield(
                loop.run_in_executor(
                    self._executor,
                    lambda: slots.stop(process, None if hard else conn, hard=hard, grace=grace),
                )
            )
            if slot.exchange is not None:
                await asyncio.shield(slot.exchange)
        finally:
            if conn is not None and not conn.closed:
                conn.close()
            slot.conn = None
            slot.state = SlotState.DOWN
            metrics.process_pool_processes_alive.dec()
            slot.reaped.set()
            self._notify()

    async def _pause_before_restart(self, slot: Slot) -> None:
        if not slot.retire_failure:
            return
        decision = slot.policy.on_failure()
        if decision.give_up:
            log.critical(
                "process_pool_slot_gave_up",
                slot=slot.index,
                recent_failures=decision.recent,
                detail="restart limit reached; the breaker opens",
            )
            if self._breaker.trip():
                self._set_breaker_gauge(True)
            slot.policy = self._new_policy()
            self._notify()
            return
        log.info(
            "process_pool_restart_scheduled",
            slot=slot.index,
            delay=decision.delay,
            consecutive_failures=decision.attempt,
            reason=slot.retire_reason,
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._closed_or_closing(), timeout=decision.delay)

    async def _closed_or_closing(self) -> None:
        while not self._closing:
            await self._wait_changed(None)

    def _supervisor_done(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.critical(
                "process_pool_supervisor_died", task=task.get_name(), exc_info=task.exception()
            )

    # -- wake-ups -------------------------------------------------------------------

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def _wait_changed(self, timeout: float | None) -> None:
        changed = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), timeout)
