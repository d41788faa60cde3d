"""The workgroup supervisor: the children of one config, one asyncio loop, every task owned.

Everything that runs is a part (``lifecycle.Part``), in one list (``Supervisor._parts``)
started in order and stopped in reverse:

    store      the store it rescues, health-checks and reports on (``store.py``)
    wake-relay the host's one LISTEN connection, relayed to the children (``relay.py``;
               only with ``TASKQ_PG_DSN_DIRECT``); stopped after them
    http       ``/live`` ``/ready`` ``/metrics`` ``/status`` (``http.py``; with a port)
    reporter   the fleet report and the backlog metrics (``reporter.py``)
    children   one lifecycle task per child: spawn, run, rescue, restart or latch
               (``children.py``); stopped first: SIGTERM, ``shutdown_grace``, SIGKILL

Shutdown (``request_stop()``, SIGTERM, SIGINT): the parts stop in reverse order, so the
children go first (SIGTERM to every living child, up to ``shutdown_grace`` for them,
SIGKILL to the process groups of the rest, their running jobs rescued), then the
reporter, HTTP and the store. A second stop request hurries: the children are killed at
once.
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

from .. import exit_codes
from ..backlog import REPORT_INTERVAL
from ..events import (
    WORKGROUP_EVENT_HOOK_FAILED,
    WORKGROUP_RELOAD_IGNORED,
    WORKGROUP_RELOAD_SIGNAL,
    WORKGROUP_SIGNAL_RECEIVED,
    WORKGROUP_STOPPED,
)
from ..exceptions import StoreUnavailable, TaskqError, WorkgroupStartError
from ..ids import uuid7
from ..lifecycle import Part, Parts
from ..logs import get_logger
from ..restart import RestartPolicy
from ..settings import DEFAULT_SCHEMA, HEALTH_DSN_ENV, dsn_kind, env_dsn, env_setting
from ..store import Store, host_notices
from .child import Child, ChildState, build_command
from .children import UNHEALTHY_KILL_GRACE, Children, refresh_gauges
from .config import WorkgroupConfig
from .http import NOT_READY, SHUTTING_DOWN, StatusServer
from .relay import WakeRelay
from .reporter import FleetReporter
from .store import STORE_CALL_TIMEOUT, SupervisorStore

log = get_logger(__name__)


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
        self.config = config
        self.instance = instance or uuid7()
        self._on_event = on_event
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
        self._store = SupervisorStore(sup, env, required=config.health_enabled)
        #: the host's one LISTEN connection, relayed to the children (TASKQ_PG_DSN_DIRECT)
        self.relay: WakeRelay | None = None
        self._http = StatusServer(
            status=self.status,
            ready=self.readiness,
            children=self._child_sockets,
            port=sup.http_port,
            host=http_host or sup.http_host,
        )
        self._reporter = FleetReporter(
            instance=self.instance,
            store=self._store.for_report,
            children=lambda: [c.status() for c in self.children],
            queues=[q for c in self.children for q in c.spec.queues],
            interval=report_interval,
        )
        self._unhealthy_kill_grace = unhealthy_kill_grace
        self._parts: Parts | None = None
        self._stop = asyncio.Event()
        self._hurried = False
        self._running = False

    @property
    def store(self) -> Store | None:
        """The supervisor's store, while it is open."""
        return self._store.store

    # -- public ---------------------------------------------------------------------------

    @property
    def http_port(self) -> int | None:
        return self._http.port

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def request_stop(self, *, hurry: bool = False) -> None:
        """Begin the graceful shutdown; a second call (or ``hurry``) kills at once."""
        if (self._stop.is_set() or hurry) and self._parts is not None:
            self._parts.hurry()
        self._hurried = self._hurried or hurry or self._stop.is_set()
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
        health-check store, the wake relay or the HTTP port cannot be set up."""
        if self._running:
            raise RuntimeError("this Supervisor is already running")
        self._running = True
        loop = asyncio.get_running_loop()
        handled: list[signal.Signals] = []
        parts: Parts | None = None
        try:
            if install_signal_handlers:
                handled = self._install_signal_handlers(loop)
            self.relay = await self._wake_relay()
            children = Children(
                self.children,
                config=self.config,
                instance=self.instance,
                store=self._store,
                relay=self.relay,
                emit=self._emit,
                unhealthy_kill_grace=self._unhealthy_kill_grace,
            )
            relay: list[Part] = [] if self.relay is None else [self.relay]
            # the one list: started in this order, stopped in reverse (children first)
            parts = self._parts = Parts([self._store, *relay, self._http, self._reporter, children])
            if self._hurried:
                parts.hurry()
            await parts.start()
            ended = await parts.wait(self._stop)
            await parts.stop()
            for part in ended:  # a part that ended on its own: a bug, never silent
                raise part.error or RuntimeError(f"the workgroup's {part.name} part ended")
        finally:
            for sig in handled:
                loop.remove_signal_handler(sig)
            if parts is not None:
                await parts.abort()
            for child in self.children:
                if child.state is not ChildState.LATCHED:
                    child.state = ChildState.STOPPED
                try:
                    os.unlink(child.command.socket_path)
                except OSError:
                    pass
            refresh_gauges(self.children)
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
            said = exc.message if HEALTH_DSN_ENV in exc.message else f"{HEALTH_DSN_ENV}: {exc}"
            raise WorkgroupStartError(said) from None
        return WakeRelay(notices)
