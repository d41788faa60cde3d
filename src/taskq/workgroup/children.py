"""The children of a workgroup, as one part of its supervisor (``lifecycle.Part``).

Per child, one lifecycle task loops: spawn -> run (pumps, optional health watch) -> the
process ends -> its pipes are drained to EOF -> its running jobs are rescued at once ->
the restart policy answers "after this delay" or "give up" (latched). Nothing blocks:
backoff waits are ``asyncio`` waits that a stop interrupts, so signals and HTTP are
served while a child crash-loops.

``start`` logs the start (``workgroup-started``) and makes every metric series exist;
``run`` owns the lifecycle tasks until the stop; ``stop`` begins the shutdown: SIGTERM to
every living child, wait up to ``shutdown_grace`` for them, SIGKILL the process groups
of the rest (at once with ``hurry``: a second stop request), rescue what they left
running. ``run`` returns when every lifecycle has ended.
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Sequence
from uuid import UUID

from .. import exit_codes, metrics
from ..blame import blames_job
from ..events import (
    WORKGROUP_BURST_LIMIT_EXCEEDED,
    WORKGROUP_CHILD_EXITED,
    WORKGROUP_CHILD_STARTED,
    WORKGROUP_CHILD_STOPPED,
    WORKGROUP_CHILD_UNHEALTHY,
    WORKGROUP_CONFIG_WARNING,
    WORKGROUP_HEALTH_WATCH_FAILED,
    WORKGROUP_JOBS_RESCUED,
    WORKGROUP_KILLING_CHILDREN,
    WORKGROUP_RESCUE_FAILED,
    WORKGROUP_RESCUE_SKIPPED,
    WORKGROUP_RESTART_SCHEDULED,
    WORKGROUP_SPAWN_FAILED,
    WORKGROUP_STARTED,
    WORKGROUP_STOPPING,
    WORKGROUP_STREAM_NOT_CLOSED,
)
from ..lifecycle import StopSignal
from ..logs import get_logger
from ..restart import Recovered
from . import health, oom
from .child import PIPE_LIMIT, Child, ChildState, describe_exit, exit_fields
from .config import WorkgroupConfig
from .pumps import pump
from .relay import WakeRelay
from .store import STORE_CALL_TIMEOUT, SupervisorStore
from .validate import warnings_for

log = get_logger(__name__)

#: after an unhealthy child got SIGTERM, how long before SIGKILL
UNHEALTHY_KILL_GRACE = 5.0
#: after a child exited, how long its pipes may take to reach EOF (a grandchild holding
#: them open is killed with the group first, so this is only a safety net)
PUMP_DRAIN_TIMEOUT = 5.0
#: the ``reason`` label values of ``taskq_workgroup_child_restarts_total``
RESTART_REASONS = ("child_exit", "spawn_failed", "unhealthy")

#: the supervisor's hook for what it did or saw (kind, worker, fields)
Emit = Callable[..., None]


class Children:
    name = "children"
    stop_timeout = None  # bounded by shutdown_grace, then SIGKILL

    def __init__(
        self,
        children: list[Child],
        *,
        config: WorkgroupConfig,
        instance: UUID,
        store: SupervisorStore,
        relay: WakeRelay | None,
        emit: Emit,
        unhealthy_kill_grace: float = UNHEALTHY_KILL_GRACE,
    ) -> None:
        self.children = children
        self.config = config
        self.instance = instance
        self._store = store
        self._relay = relay
        self._emit = emit
        self._unhealthy_kill_grace = unhealthy_kill_grace
        self._stopped = StopSignal()
        self._hurry = asyncio.Event()

    @property
    def stopping(self) -> bool:
        return bool(self._stopped)

    def stop(self, *, hurry: bool = False) -> None:
        self._stopped.set(hurry=hurry)
        if hurry:
            self._hurry.set()

    async def start(self) -> None:
        for warning in warnings_for(self.config, None):  # the grace arithmetic
            log.event(WORKGROUP_CONFIG_WARNING, warning=warning)
        metrics.workgroup_children_configured.set(len(self.children))
        for child in self.children:  # every series exists from the first scrape
            for reason in RESTART_REASONS:
                metrics.workgroup_child_restarts.labels(worker=child.name, reason=reason)
        self.refresh_gauges()
        log.event(
            WORKGROUP_STARTED,
            instance=str(self.instance),
            config=self.config.path,
            workers=[c.name for c in self.children],
            shutdown_grace=self.config.supervisor.shutdown_grace,
        )
        self._emit("started", None, instance=str(self.instance))

    async def run(self) -> None:
        lifecycles = [
            asyncio.create_task(self._supervise(child), name=f"workgroup-{child.name}")
            for child in self.children
        ]
        stopped = asyncio.ensure_future(self._stopped.wait())
        try:
            pending: set[asyncio.Future[None]] = set(lifecycles)
            while not stopped.done():  # a child that latched leaves the others running
                done, _ = await asyncio.wait(
                    pending | {stopped}, return_when=asyncio.FIRST_COMPLETED
                )
                pending -= done
                for task in done - {stopped}:
                    task.result()  # a lifecycle that raised: a bug, the supervisor ends
            await self._shut_down(lifecycles)
            await asyncio.gather(*lifecycles)
        finally:
            stopped.cancel()
            for task in lifecycles:
                task.cancel()
            await asyncio.gather(stopped, *lifecycles, return_exceptions=True)

    def refresh_gauges(self) -> None:
        refresh_gauges(self.children)

    async def _supervise(self, child: Child) -> None:
        """The lifecycle of one child, until shutdown or latch."""
        while not self.stopping:
            relay = self._relay
            wake_fd = None if relay is None else relay.attach(child.name, child.spec.queues)
            try:
                process = await child.spawn(wake_fd)
            except OSError as exc:
                reason = "spawn_failed"
                cause = f"spawn failed: {exc.strerror or exc}"
                child.last_exit_cause = cause
                child.state = ChildState.BACKOFF
                log.event(
                    WORKGROUP_SPAWN_FAILED,
                    worker=child.name,
                    error=cause,
                    argv0=child.command.argv[0],
                )
            else:
                self.refresh_gauges()
                log.event(
                    WORKGROUP_CHILD_STARTED,
                    worker=child.name,
                    child_pid=process.pid,
                    restarts=child.restarts,
                )
                self._emit("child_started", child.name, pid=process.pid, restarts=child.restarts)
                if self.stopping:  # the stop sweep ran while we were spawning
                    child.state = ChildState.STOPPING
                    child.send(signal.SIGTERM)
                reason, cause = await self._run_incarnation(child, process)
            if relay is not None:
                relay.detach(child.name)  # its process is gone
            if self.stopping:
                return
            decision = child.policy.on_failure()
            if decision.give_up:
                child.state = ChildState.LATCHED
                self.refresh_gauges()
                log.event(
                    WORKGROUP_BURST_LIMIT_EXCEEDED,
                    worker=child.name,
                    reason=reason,
                    exit_cause=cause,
                    restarts_in_window=decision.recent,
                    burst_limit=child.policy.burst_limit,
                    burst_window=child.policy.burst_window,
                    detail="this child is no longer restarted; restart the workgroup to try again",
                )
                self._emit(
                    "latched",
                    child.name,
                    reason=reason,
                    exit_cause=cause,
                    restarts_in_window=decision.recent,
                )
                return
            child.restarts += 1
            child.last_restart_reason = reason
            child.state = ChildState.BACKOFF
            delay = round(decision.delay, 3)
            log.event(
                WORKGROUP_RESTART_SCHEDULED,
                worker=child.name,
                reason=reason,
                delay=delay,
                exit_cause=cause,
                attempt=decision.attempt,
                restarts_in_window=decision.recent,
            )
            self._emit(
                "restart_scheduled",
                child.name,
                reason=reason,
                delay=delay,
                exit_cause=cause,
                attempt=decision.attempt,
            )
            await self._stopped.sleep(decision.delay)

    async def _run_incarnation(
        self,
        child: Child,
        process: asyncio.subprocess.Process,
    ) -> tuple[str, str]:
        """Run one process to its end; return (restart reason, exit cause)."""
        name, pid = child.name, process.pid
        assert process.stdout is not None and process.stderr is not None
        pumps = [
            asyncio.create_task(
                pump(
                    reader,
                    worker=name,
                    stream=stream,
                    pid=pid,
                    limit=PIPE_LIMIT,
                    on_event=child.on_child_event,
                ),
                name=f"pump-{name}-{stream}",
            )
            for stream, reader in (("stdout", process.stdout), ("stderr", process.stderr))
        ]
        exited = asyncio.create_task(process.wait(), name=f"wait-{name}")
        watcher: asyncio.Task[str] | None = None
        if child.spec.health.enabled and self._store.store is not None:
            watcher = asyncio.create_task(
                health.watch(
                    self._store.store,
                    self.instance,
                    name,
                    pid,
                    child.spec.health,
                    on_healthy=lambda: self._on_healthy(child),
                ),
                name=f"health-{name}",
            )
        reason, unhealthy = "child_exit", None
        try:
            waiting = {exited} if watcher is None else {exited, watcher}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if watcher is not None and watcher.done() and not exited.done() and not self.stopping:
                unhealthy = self._watch_result(watcher)
                reason = "unhealthy"
                await self._kill_unhealthy(child, exited, unhealthy)
            returncode = await exited
        finally:
            if watcher is not None and not watcher.done():
                watcher.cancel()
                await asyncio.gather(watcher, return_exceptions=True)
            if not exited.done():  # only when we are cancelled ourselves
                child.kill_group()
                exited.cancel()
            child.kill_group()  # anything the child left in its group (pool processes)
            await self._drain_pumps(name, pumps)
        self.refresh_gauges()
        cause = describe_exit(returncode)
        oom_kill = False
        if returncode == -signal.SIGKILL and unhealthy is None:
            oom_kill = await asyncio.to_thread(oom.oom_killed, pid)
            if oom_kill:
                cause += " (OOM kill: named in the kernel log)"
        if unhealthy is not None:
            cause = f"unhealthy ({unhealthy}); {cause}"
        child.last_exit_cause = cause
        # a child killed for failing its health check did not stop because it was asked to
        asked = (self.stopping or child.state is ChildState.STOPPING) and unhealthy is None
        log.event(
            WORKGROUP_CHILD_STOPPED if asked else WORKGROUP_CHILD_EXITED,
            worker=name,
            child_pid=pid,
            exit_cause=cause,
            **exit_fields(returncode),
        )
        self._emit("child_exited", name, pid=pid, exit_cause=cause, returncode=returncode)
        await self._rescue(child, pid, cause, blamed=_blames_job(returncode, unhealthy, oom_kill))
        return reason, cause

    def _watch_result(self, watcher: asyncio.Task[str]) -> str:
        exc = watcher.exception()
        if exc is not None:
            log.event(WORKGROUP_HEALTH_WATCH_FAILED, error=f"{type(exc).__name__}: {exc}")
            return f"health watch failed: {type(exc).__name__}: {exc}"
        return watcher.result()

    def _on_healthy(self, child: Child) -> None:
        if not child.healthy_once:
            child.healthy_once = True
            child.policy.on_success(Recovered.PASSED_A_HEALTH_CHECK)

    async def _kill_unhealthy(self, child: Child, exited: asyncio.Task[int], why: str) -> None:
        log.event(
            WORKGROUP_CHILD_UNHEALTHY,
            worker=child.name,
            child_pid=child.pid,
            problem=why,
            action=f"SIGTERM, SIGKILL after {self._unhealthy_kill_grace:g}s",
        )
        self._emit("unhealthy", child.name, pid=child.pid, problem=why)
        child.state = ChildState.STOPPING
        child.send(signal.SIGTERM)
        done, _ = await asyncio.wait({exited}, timeout=self._unhealthy_kill_grace)
        if not done:
            child.kill_group()

    async def _drain_pumps(self, name: str, pumps: list[asyncio.Task[None]]) -> None:
        _, pending = await asyncio.wait(pumps, timeout=PUMP_DRAIN_TIMEOUT)
        if pending:
            log.event(
                WORKGROUP_STREAM_NOT_CLOSED,
                worker=name,
                detail=f"output pipes still open {PUMP_DRAIN_TIMEOUT:g}s after exit",
            )
            for task in pending:
                task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)

    async def _rescue(self, child: Child, pid: int, cause: str, *, blamed: bool) -> None:
        """Apply the crash rules now to what the dead child was running (``blamed``: the
        way it died points at a job, see taskq.blame)."""
        store = await self._store.for_rescue()
        if store is None:
            return
        text = f"worker {child.name!r} (pid {pid}) {cause} [observed by workgroup {self.instance}]"
        try:
            row = await asyncio.wait_for(
                store.find_worker(self.instance, child.name), STORE_CALL_TIMEOUT
            )
            if row is None or row.pid != pid:
                log.event(
                    WORKGROUP_RESCUE_SKIPPED,
                    worker=child.name,
                    child_pid=pid,
                    detail="no worker row of this process (never registered, or it "
                    "unregistered on a clean exit)",
                )
                return
            rescued = await asyncio.wait_for(
                store.rescue_worker(row.id, text, blamed=blamed), STORE_CALL_TIMEOUT
            )
        except Exception as exc:
            log.event(
                WORKGROUP_RESCUE_FAILED,
                worker=child.name,
                child_pid=pid,
                error=f"{type(exc).__name__}: {exc}",
                detail="its running jobs will be rescued when their leases expire",
            )
            return
        log.event(
            WORKGROUP_JOBS_RESCUED,
            worker=child.name,
            child_pid=pid,
            worker_id=str(row.id),
            count=len(rescued),
            exit_cause=cause,
            requeued=sum(1 for j in rescued if j.state == "queued"),
            dead=sum(1 for j in rescued if j.state == "dead"),
            jobs=[str(j.id) for j in rescued[:20]],
        )
        self._emit(
            "jobs_rescued",
            child.name,
            pid=pid,
            count=len(rescued),
            jobs=[(str(j.id), j.actor, j.state, j.dead_reason) for j in rescued],
        )

    async def _shut_down(self, lifecycles: list[asyncio.Task[None]]) -> None:
        """SIGTERM to every living child, ``shutdown_grace`` for them (cut short by a
        hurry), then SIGKILL to the process groups of the rest."""
        grace = self.config.supervisor.shutdown_grace
        alive = [c for c in self.children if c.alive and c.state is ChildState.RUNNING]
        log.event(WORKGROUP_STOPPING, children=len(alive), shutdown_grace=grace)
        self._emit("stopping", None, children=len(alive), shutdown_grace=grace)
        for child in alive:
            child.state = ChildState.STOPPING
            child.send(signal.SIGTERM)
        hurried = asyncio.create_task(self._hurry.wait(), name="workgroup-hurry-wait")
        try:
            pending = {t for t in lifecycles if not t.done()}
            deadline = time.monotonic() + grace
            while pending and not hurried.done():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                done, _ = await asyncio.wait(
                    pending | {hurried}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                pending -= done
        finally:
            hurried.cancel()
            await asyncio.gather(hurried, return_exceptions=True)
        survivors = [c for c in self.children if c.alive]
        if survivors:
            log.event(
                WORKGROUP_KILLING_CHILDREN,
                workers=[c.name for c in survivors],
                why="second stop signal"
                if self._hurry.is_set()
                else f"still running after shutdown_grace {grace:g}s",
            )
            for child in survivors:
                child.kill_group()


def refresh_gauges(children: Sequence[Child]) -> None:
    metrics.workgroup_children_alive.set(sum(1 for c in children if c.alive))
    metrics.workgroup_children_latched.set(sum(1 for c in children if c.latched))


def _blames_job(returncode: int, unhealthy: str | None, oom_kill: bool = False) -> bool:
    """Does a child worker's death point at the jobs it ran? A kill by this supervisor for
    a hang (failed health checks) does; so do fatal signals from inside, exit codes other
    than the worker's own (taskq.exit_codes.WORKER_OWN) and an OOM kill the kernel log
    names; an outside SIGKILL/SIGTERM does not."""
    signal_name: str | None = None
    if returncode < 0:
        try:
            signal_name = signal.Signals(-returncode).name
        except ValueError:
            signal_name = f"signal {-returncode}"
    return blames_job(
        exit_signal=signal_name,
        exit_code=returncode if returncode >= 0 else None,
        oom_kill=oom_kill,
        killed_for_hang=unhealthy is not None,
        own_exit_codes=exit_codes.WORKER_OWN,
    )
