"""The workgroup supervisor: N child workers, one asyncio loop, every task owned.

Per child, one lifecycle task loops: spawn -> run (pumps, optional health watch) -> the
process ends -> its pipes are drained to EOF -> its running jobs are rescued at once ->
the restart policy answers "after this delay" or "give up" (latched). Nothing blocks:
backoff waits are ``asyncio`` waits that a stop request interrupts, so signals and HTTP
are served while a child crash-loops.

Shutdown (``request_stop()``, SIGTERM, SIGINT): SIGTERM to every living child, wait up to
``shutdown_grace`` for them, SIGKILL the process groups of the rest, rescue what they
left running, close HTTP and the store. A second stop request kills at once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
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
    WORKGROUP_EVENT_HOOK_FAILED,
    WORKGROUP_HEALTH_WATCH_FAILED,
    WORKGROUP_HTTP_LISTENING,
    WORKGROUP_JOBS_RESCUED,
    WORKGROUP_KILLING_CHILDREN,
    WORKGROUP_RELOAD_IGNORED,
    WORKGROUP_RELOAD_SIGNAL,
    WORKGROUP_RESCUE_FAILED,
    WORKGROUP_RESCUE_SKIPPED,
    WORKGROUP_RESTART_SCHEDULED,
    WORKGROUP_SIGNAL_RECEIVED,
    WORKGROUP_SPAWN_FAILED,
    WORKGROUP_STARTED,
    WORKGROUP_STOPPED,
    WORKGROUP_STOPPING,
    WORKGROUP_STORE_OPENED,
    WORKGROUP_STORE_UNAVAILABLE,
    WORKGROUP_STREAM_NOT_CLOSED,
)
from ..exceptions import StoreUnavailable, TaskqError, WorkgroupStartError
from ..ids import uuid7
from ..logs import get_logger
from ..restart import Recovered, RestartPolicy
from ..settings import DEFAULT_SCHEMA, HEALTH_DSN_ENV, dsn_kind, env_dsn, env_setting
from ..store import Store, create_store, host_notices
from . import health, oom
from .child import PIPE_LIMIT, Child, ChildState, build_command, describe_exit, exit_fields
from .config import WorkgroupConfig
from .http import NOT_READY, SHUTTING_DOWN, StatusServer
from .pumps import pump
from .relay import WakeRelay
from .reporter import FleetReporter
from .validate import warnings_for

log = get_logger(__name__)

#: after an unhealthy child got SIGTERM, how long before SIGKILL
UNHEALTHY_KILL_GRACE = 5.0
#: after a child exited, how long its pipes may take to reach EOF (a grandchild holding
#: them open is killed with the group first, so this is only a safety net)
PUMP_DRAIN_TIMEOUT = 5.0
#: the ``reason`` label values of ``taskq_workgroup_child_restarts_total``
RESTART_REASONS = ("child_exit", "spawn_failed", "unhealthy")
#: how often the supervisor reports its children and (when it leads) the backlog
REPORT_INTERVAL = 5.0
#: while the store cannot be opened, how often the fleet report tries again
REPORT_REOPEN_INTERVAL = 60.0
#: one store call of the rescue path
STORE_CALL_TIMEOUT = 10.0


@dataclass(frozen=True, slots=True)
class SupervisionEvent:
    """Something the supervisor did or saw, for ``on_event`` hooks (``taskq demo``)."""

    kind: str  # see Supervisor's docstring for the kinds
    worker: str | None
    fields: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)


class Supervisor:
    """Supervise the children of one workgroup config. See ``taskq.workgroup``."""

    def __init__(
        self,
        config: WorkgroupConfig,
        *,
        instance: UUID | None = None,
        on_event: Callable[[SupervisionEvent], None] | None = None,
        executable: str | None = None,
        env: Mapping[str, str] | None = None,
        http_host: str | None = None,
        unhealthy_kill_grace: float = UNHEALTHY_KILL_GRACE,
        report_interval: float = REPORT_INTERVAL,
    ) -> None:
        self._report_interval = report_interval
        self._next_report_open = 0.0
        self.config = config
        self.instance = instance or uuid7()
        self._on_event = on_event
        self._http_host = http_host or config.supervisor.http_host
        self._unhealthy_kill_grace = unhealthy_kill_grace
        self._env = env
        sup = config.supervisor
        self.children = [
            Child(
                spec,
                build_command(
                    spec,
                    actors=config.actors,
                    instance=self.instance,
                    supervisor=sup,
                    executable=executable,
                    base_env=env,
                ),
                RestartPolicy(
                    initial=sup.backoff_initial,
                    factor=sup.backoff_factor,
                    maximum=sup.backoff_max,
                    burst_limit=sup.burst_limit,
                    burst_window=sup.burst_window,
                ),
            )
            for spec in config.workers
        ]
        self.store: Store | None = None
        #: the host's one LISTEN connection, relayed to the children (TASKQ_PG_DSN_DIRECT)
        self.relay: WakeRelay | None = None
        self._http = StatusServer(
            status=self.status, ready=self.readiness, children=self._child_sockets
        )
        self._stop = asyncio.Event()
        self._hurry = asyncio.Event()
        self._running = False

    # -- public ---------------------------------------------------------------------------

    @property
    def http_port(self) -> int | None:
        return self._http.port

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, *, hurry: bool = False) -> None:
        """Begin the graceful shutdown; a second call (or ``hurry``) kills at once."""
        if self._stop.is_set() or hurry:
            self._hurry.set()
        self._stop.set()

    def reload(self) -> int:
        """Forward SIGHUP to every living child; return how many got it."""
        if self.stopping:
            log.event(WORKGROUP_RELOAD_IGNORED, reason="shutting down")
            return 0
        sent, skipped = [], []
        for child in self.children:
            # a child mid-restart has no process; one still starting has no handler yet
            # (SIGHUP would kill it) and reads the current credentials anyway
            if (
                child.state is ChildState.RUNNING
                and child.signals_ready
                and child.send(signal.SIGHUP)
            ):
                sent.append(child.name)
            else:
                skipped.append(child.name)
        log.event(WORKGROUP_RELOAD_SIGNAL, children=len(sent), workers=sent, skipped=skipped)
        self._emit("reload_signal", None, children=len(sent), workers=sent, skipped=skipped)
        return len(sent)

    def readiness(self) -> tuple[bool, str]:
        """The supervisor's own view: not ready while shutting down or while any child is
        not running (not spawned yet, in backoff, latched); ``/ready`` also asks each
        running child (``http.StatusServer``)."""
        if self.stopping:
            return False, SHUTTING_DOWN
        problems = [p for p in (c.not_ready() for c in self.children) if p is not None]
        if problems:
            return False, NOT_READY + "; ".join(problems)
        return True, "ready"

    def status(self) -> dict[str, Any]:
        ready, why = self.readiness()
        return {
            "instance": str(self.instance),
            "pid": os.getpid(),
            "state": "stopping" if self.stopping else ("running" if self._running else "idle"),
            "ready": ready,
            "ready_reason": why,
            "children": [c.status() for c in self.children],
            "wake_relay": None if self.relay is None else self.relay.status(),
        }

    async def run(self, *, install_signal_handlers: bool = False) -> int:
        """Supervise until a stop request; return 0. Raises ``WorkgroupStartError`` when the
        health-check store or the HTTP port cannot be set up."""
        if self._running:
            raise RuntimeError("this Supervisor is already running")
        self._running = True
        loop = asyncio.get_running_loop()
        handled: list[signal.Signals] = []
        try:
            if install_signal_handlers:
                handled = self._install_signal_handlers(loop)
            await self._open_store(required=self.config.health_enabled)
            self.relay = await self._wake_relay()
            if self.config.supervisor.http_port is not None:
                try:
                    port = await self._http.start(self.config.supervisor.http_port, self._http_host)
                except OSError as exc:
                    raise WorkgroupStartError(
                        f"cannot serve HTTP on port {self.config.supervisor.http_port}: "
                        f"{exc.strerror or exc}"
                    ) from None
                log.event(WORKGROUP_HTTP_LISTENING, port=port, host=self._http_host)
            for warning in warnings_for(self.config, None):  # the grace arithmetic
                log.event(WORKGROUP_CONFIG_WARNING, warning=warning)
            metrics.workgroup_children_configured.set(len(self.children))
            for child in self.children:  # every series exists from the first scrape
                for reason in RESTART_REASONS:
                    metrics.workgroup_child_restarts.labels(worker=child.name, reason=reason)
            self._refresh_gauges()
            log.event(
                WORKGROUP_STARTED,
                instance=str(self.instance),
                config=self.config.path,
                workers=[c.name for c in self.children],
                shutdown_grace=self.config.supervisor.shutdown_grace,
            )
            self._emit("started", None, instance=str(self.instance))
            async with asyncio.TaskGroup() as group:
                lifecycles = [
                    group.create_task(self._supervise(child), name=f"workgroup-{child.name}")
                    for child in self.children
                ]
                group.create_task(self._shutdown_on_stop(lifecycles), name="workgroup-shutdown")
                group.create_task(self._reporter().run(self._stop), name="workgroup-report")
                if self.relay is not None:
                    await self.relay.start()
                    group.create_task(self.relay.run(), name="workgroup-wake-relay")
                    group.create_task(
                        self._stop_relay_after(lifecycles), name="workgroup-wake-relay-stop"
                    )
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
            await self._http.close()
            if self.store is not None:
                await self.store.close()
            for child in self.children:
                if child.state is not ChildState.LATCHED:
                    child.state = ChildState.STOPPED
                try:
                    os.unlink(child.command.socket_path)
                except OSError:
                    pass
            self._refresh_gauges()
        log.event(WORKGROUP_STOPPED, instance=str(self.instance))
        self._emit("stopped", None)
        return exit_codes.OK

    # -- internals ------------------------------------------------------------------------

    def _emit(self, kind: str, worker: str | None, **fields: Any) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(SupervisionEvent(kind, worker, fields))
        except Exception:
            log.event(WORKGROUP_EVENT_HOOK_FAILED, exc_info=True, kind=kind)

    def _refresh_gauges(self) -> None:
        metrics.workgroup_children_alive.set(sum(1 for c in self.children if c.alive))
        metrics.workgroup_children_latched.set(sum(1 for c in self.children if c.latched))

    def _reporter(self) -> FleetReporter:
        return FleetReporter(
            instance=self.instance,
            store=self._store_for_report,
            children=lambda: [c.status() for c in self.children],
            queues=[q for c in self.children for q in c.spec.queues],
            interval=self._report_interval,
        )

    def _child_sockets(self) -> list[tuple[str, str | None]]:
        """Each child's health socket while it runs (the ``/metrics`` merge)."""
        return [
            (c.name, c.command.socket_path if c.state is ChildState.RUNNING and c.alive else None)
            for c in self.children
        ]

    def _install_signal_handlers(self, loop: asyncio.AbstractEventLoop) -> list[signal.Signals]:
        handled = []
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._on_stop_signal, sig)
            handled.append(sig)
        if hasattr(signal, "SIGHUP"):
            loop.add_signal_handler(signal.SIGHUP, self._on_hangup)
            handled.append(signal.SIGHUP)
        return handled

    def _on_stop_signal(self, sig: signal.Signals) -> None:
        second = self._stop.is_set()
        log.event(
            WORKGROUP_SIGNAL_RECEIVED,
            signal=sig.name,
            action="kill children now" if second else "graceful shutdown",
        )
        self.request_stop()

    def _on_hangup(self) -> None:
        self.reload()

    def _store_settings(self) -> tuple[str | None, str | None]:
        """The health checks' store: ``health_pg_dsn``, else ``TASKQ_PG_DSN_DIRECT`` (a
        direct connection, past a pooler), else the store the children use (the
        environment they are started with: ``env``, or this process's)."""
        sup = self.config.supervisor
        env = os.environ if self._env is None else self._env
        direct = sup.health_pg_dsn or env.get(HEALTH_DSN_ENV) or None
        if self._env is None:
            return direct, sup.health_pg_schema
        dsn = direct or env_dsn(self._env)
        return dsn, sup.health_pg_schema or env_setting("TASKQ_SCHEMA", self._env)

    async def _wake_relay(self) -> WakeRelay | None:
        """The relay of the host's one LISTEN connection, when the children run on
        Postgres and ``TASKQ_PG_DSN_DIRECT`` (in their environment) is set: refused with
        one line when it does not reach their database directly (checked now when both
        answer; when one does not, the relay's own attempts report it)."""
        env = os.environ if self._env is None else self._env
        direct = env.get(HEALTH_DSN_ENV) or None
        children_dsn = env_dsn(env)
        if direct is None or children_dsn is None or dsn_kind(children_dsn) != "postgres":
            return None
        schema = env_setting("TASKQ_SCHEMA", env) or DEFAULT_SCHEMA
        try:
            notices = host_notices(direct, schema)
            await asyncio.wait_for(notices.check_same_database(children_dsn), STORE_CALL_TIMEOUT)
        except (StoreUnavailable, TimeoutError):
            pass
        except TaskqError as exc:
            raise WorkgroupStartError(exc.message) from None
        return WakeRelay(notices)

    async def _stop_relay_after(self, lifecycles: list[asyncio.Task[None]]) -> None:
        """Stop the relay once every child's lifecycle ended (a child in its shutdown
        grace still hears of cancels)."""
        await asyncio.wait(lifecycles)
        if self.relay is not None:
            self.relay.stop()

    async def _open_store(self, *, required: bool) -> None:
        try:
            store = create_store(*self._store_settings())
            await asyncio.wait_for(store.open(), STORE_CALL_TIMEOUT)
        except (TaskqError, OSError, TimeoutError) as exc:
            message = exc.message if isinstance(exc, TaskqError) else str(exc) or type(exc).__name__
            if required:
                raise WorkgroupStartError(
                    f"the health-check store could not be opened: {message}"
                ) from None
            log.event(
                WORKGROUP_STORE_UNAVAILABLE,
                error=message,
                detail="dead children's jobs will be rescued by lease expiry",
            )
            return
        self.store = store
        log.event(WORKGROUP_STORE_OPENED, dsn=store.display_dsn)

    async def _store_for_report(self) -> Store | None:
        """The store for the fleet report: opened again at most once a minute while it
        cannot be (each failed attempt logs a warning)."""
        if self.store is None and time.monotonic() >= self._next_report_open:
            self._next_report_open = time.monotonic() + REPORT_REOPEN_INTERVAL
            await self._open_store(required=False)
        return self.store

    async def _store_for_rescue(self) -> Store | None:
        if self.store is None:
            await self._open_store(required=False)
        return self.store

    async def _wait_stop(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._stop.wait(), seconds)
        except TimeoutError:
            pass

    async def _supervise(self, child: Child) -> None:
        """The lifecycle of one child, until shutdown or latch."""
        while not self.stopping:
            relay = self.relay
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
                self._refresh_gauges()
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
                self._refresh_gauges()
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
            await self._wait_stop(decision.delay)

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
        if child.spec.health.enabled and self.store is not None:
            watcher = asyncio.create_task(
                health.watch(
                    self.store,
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
        self._refresh_gauges()
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
        store = await self._store_for_rescue()
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

    async def _shutdown_on_stop(self, lifecycles: list[asyncio.Task[None]]) -> None:
        await self._stop.wait()
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
