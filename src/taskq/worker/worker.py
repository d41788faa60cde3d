"""``Worker``: one worker process's parts, started in order and stopped in reverse.

Start: load the registry, then start the parts (``lifecycle.Part``: ``start``, ``run``,
idempotent ``stop``) in the order of the one list in ``Worker._build``: ``stores``
first (both stores opened at once; the schema and the actor configs checked while the
claim connections warm up: drift refuses to start unless forced), then
``credential-reload``, ``parent-watch`` (a workgroup child), ``health``, ``heartbeat``,
``acker``, ..., ``wake-relay`` (a workgroup child whose supervisor relays the host's
LISTEN connection: worker/relay.py), ... and last ``fetcher`` and ``scheduler``, the first to stop
(docs/architecture.md has the table of what each does at start, run and stop).

``lifecycle.Parts`` owns every part's ``run`` task: if one ends before a stop was asked for,
the worker logs it (``worker-part-died``, error) and shuts down with exit code 4
(3 when it was the consumers' crash-loop guard, ``CrashLoop``).

Stop (``request_stop``: SIGTERM/SIGINT, a vanished parent, the crash-loop guard):
``/ready`` turns 503, then the parts stop in reverse order, each once, each waited for:
the fetcher stops claiming and gives back the jobs no consumer started (no attempt
charged); the consumers' running jobs get ``shutdown_grace`` seconds, then are cancelled
and given back; the pool closes; acks are flushed; the row is removed. A second request
(``parts.hurry``) skips what is left of any grace.

Adding a part: write a class with ``name``, ``stop_timeout``, ``async start()``,
``async run()`` (work until ``stop()``, then wind down and return) and ``stop(*,
hurry=False)`` (``lifecycle.StopSignal`` does the waiting), and add one line to the list in
``Worker._build`` -- after the parts it uses, so that it stops before them.
"""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable, Sequence
from uuid import UUID

from .. import exit_codes, metrics
from ..events import (
    ACTOR_CONFIG_UPDATED,
    CREDENTIALS_RELOAD_FAILED,
    CREDENTIALS_RELOADED,
    QUEUES_WITHOUT_ACTORS,
    WORKER_PART_DIED,
    WORKER_STARTED,
    WORKER_STOP_HURRIED,
    WORKER_STOPPED,
    WORKER_STOPPING,
)
from ..exceptions import ActorConfigDrift, ConfigError, CrashLoop, TaskqError
from ..ids import uuid7
from ..jobs import ClaimedJob, WorkerInfo
from ..lifecycle import Ended, Part, Parts, PartState
from ..logs import get_logger
from ..middleware import Middleware
from ..registry import AnyActor, Registry, load_registry
from ..restart import RestartPolicy
from ..settings import dsn_kind, read_dsn_file, redact
from ..store import Store, create_store
from ..store.drift import routing_refusal
from ..wakeups import Wakeups
from .acker import Acker
from .buffer import ClaimPace, CpuShare, JobBuffer, cpu_refill
from .cancels import Cancels, CancelWatcher
from .config import (
    CLAIM_CONNECTIONS,
    HEARTBEAT_CONNECTIONS,
    LISTEN_CONNECTIONS,
    WorkerConfig,
    default_concurrency,
)
from .consumer import Consumer
from .cpu_runner import CpuRunner, start_fork_server
from .fetcher import Fetcher
from .health import HealthServer
from .heartbeat import Heartbeat
from .lag import LagMonitor
from .middleware import MiddlewareChain, load_middleware
from .pruner import Pruner
from .relay import RelayedWakeups
from .rescuer import Rescuer
from .runners import Executor
from .solo import Solo
from .stores import Stores
from .supervisor import TaskSupervisor
from .threads import ThreadRunner
from .watchers import CredentialReload, ParentWatch

log = get_logger(__name__)

READY_PING_TIMEOUT = 2.0
MAX_ACK_BACKLOG = 1000


def _open_connections(store: Store, hb_store: Store) -> int | None:
    """The Postgres connections the worker holds open now (None on SQLite)."""
    if store.kind != "postgres":
        return None
    return store.open_connections() + hb_store.open_connections()


def _backlog(store: Store, config: WorkerConfig, worker_id: UUID, queues: list[str]) -> list[Part]:
    """The backlog part, for a worker outside a workgroup (whose supervisor competes for
    the backlog-metrics lease instead of its children)."""
    if config.workgroup_instance is not None:
        return []
    from .backlog import BacklogReporter

    return [BacklogReporter(store, str(worker_id), queues)]


def _scheduler(store: Store, registry: Registry) -> list[Part]:
    """The scheduler part, for a registry with periodic schedules: only such a worker
    loads it (and the client and cron parsing it brings)."""
    if not registry.schedules:
        return []
    from .scheduler import Scheduler

    return [Scheduler(store, registry)]


class Worker:
    """A worker process's machinery, usable in-process: ``await Worker(config).run()``."""

    def __init__(
        self,
        config: WorkerConfig,
        *,
        registry: Registry | None = None,
        middleware: Sequence[Middleware] = (),
        restart_policy: Callable[[], RestartPolicy] = RestartPolicy,
        parent: int | None = None,
        reload_interval: float | None = None,
        wake_fd: int | None = None,
    ) -> None:
        """``parent``: the pid to watch (a workgroup child's supervisor: the worker stops
        when it is gone); ``reload_interval``: also reload the credentials whenever
        ``TASKQ_DSN_FILE`` changed, checked this often (``TASKQ_RELOAD_INTERVAL``)."""
        config.validate(name=str)  # in Python: the fields' own names
        self._wake_fd = wake_fd  # the read end of the workgroup supervisor's wake-up relay
        self._restart_policy = restart_policy
        self.config = config
        self.id = uuid7()
        self._registry = registry
        self._middleware = list(middleware)
        self._stop_reason: str | None = None
        self._stop_event: asyncio.Event | None = None
        self._stop_requests = 0
        self.shutting_down = False
        self.exit_code = exit_codes.OK
        self.store: Store | None = None
        self.supervisor: TaskSupervisor | None = None
        self._parts: Parts | None = None
        self.acker: Acker | None = None
        self.heartbeat: Heartbeat | None = None
        self.fetcher: Fetcher | None = None
        self.buffer: JobBuffer | None = None  # the claimed jobs and how many more may come
        self.queues: list[str] = []
        self.consumed: list[AnyActor] = []  # the registry's actors on those queues (in run())
        self.concurrency = config.max_concurrency or 0  # resolved against the registry in run()
        self._parent = parent
        self._reload = CredentialReload(
            self.reload_credentials,
            path=os.environ.get("TASKQ_DSN_FILE"),
            interval=reload_interval,
        )

    # -- control ----------------------------------------------------------------------
    def request_stop(self, reason: str = "requested", *, hurry: bool = False) -> None:
        """Begin a graceful shutdown; a second request (or ``hurry``) skips the grace."""
        self._stop_requests += 1
        if self._stop_event is None:  # not running yet: stop right after starting
            self._stop_reason = self._stop_reason or reason
            return
        if self._stop_reason is None:
            self._stop_reason = reason
            log.event(
                WORKER_STOPPING,
                worker_id=str(self.id),
                reason=reason,
                grace=self.config.shutdown_grace,
            )
            self._stop_event.set()
        if (hurry or self._stop_requests > 1) and self._parts is not None:
            log.event(WORKER_STOP_HURRIED, worker_id=str(self.id), reason=reason)
            self._stop_requests = max(self._stop_requests, 2)
            self._parts.hurry()

    def request_reload(self) -> None:
        """SIGHUP: re-read TASKQ_DSN_FILE and rebuild the store connections (done by the
        ``credential-reload`` part, one reload at a time)."""
        self._reload.request()

    async def reload_credentials(self) -> bool:
        path = os.environ.get("TASKQ_DSN_FILE")
        if not path:
            log.event(
                CREDENTIALS_RELOAD_FAILED,
                error="TASKQ_DSN_FILE is not set; "
                "nothing to re-read (the current connections are kept)",
            )
            return False
        try:
            dsn = read_dsn_file(path)
            if self.store is not None and dsn_kind(dsn) != self.store.kind:
                raise ConfigError(
                    f"the new DSN is for {dsn_kind(dsn)}, this worker runs on {self.store.kind}"
                )
            for store in self._stores():
                await store.reconnect(dsn)
        except Exception as exc:  # any failure keeps the old pool; never exit on SIGHUP
            log.event(
                CREDENTIALS_RELOAD_FAILED,
                error=f"{type(exc).__name__}: {exc}",
                dsn_file=path,
            )
            return False
        log.event(CREDENTIALS_RELOADED, dsn=redact(dsn), dsn_file=path)
        return True

    def _stores(self) -> list[Store]:
        stores = [self.store] if self.store is not None else []
        if self.heartbeat is not None:
            stores.append(self.heartbeat.store)
        return stores

    # -- run --------------------------------------------------------------------------
    async def run(self) -> int:
        """Run until stopped; return the exit code. Start-up problems raise TaskqError."""
        self._stop_event = asyncio.Event()
        if self._stop_reason is not None:
            self._stop_event.set()
        config = self.config
        registry = self._registry or load_registry(config.actors)
        if not len(registry):
            raise ConfigError(f"the registry {config.actors!r} has no actors")
        middleware = self._middleware + load_middleware(config.middleware)
        self.queues = list(config.queues) or sorted(registry.queues)
        self.concurrency = config.max_concurrency or default_concurrency(
            registry, config.cpu_processes
        )
        self.consumed = [a for a in registry if a.queue in self.queues]
        if any(a.cpu_bound for a in self.consumed):
            start_fork_server()  # the pool's fork server imports while the stores open
        idle = sorted(set(self.queues) - registry.queues)
        if idle:
            log.event(
                QUEUES_WITHOUT_ACTORS,
                queues=idle,
                note="jobs there are dead/unknown_actor unless they name one of ours",
            )
        name = f"taskq worker {config.worker_label or self.id}"  # in pg_stat_activity
        store = self.store = create_store(
            config.dsn, config.schema, pool_size=self._pool_size(), application_name=name
        )
        # the heartbeat's own connection: a busy pool never delays a beat
        hb_store = create_store(config.dsn, config.schema, pool_size=1, application_name=name)

        async def ready() -> None:  # while the fetcher's connections open (Stores.start)
            await store.check_schema()
            await self._check_actor_configs(store, registry)

        # a relayed child opens no LISTEN connection: it warms nothing up
        stores = Stores([store, hb_store], ready, warm_up=self._wake_fd is None)
        return await self._serve(stores, registry, middleware)

    def _pool_size(self) -> int:
        """The job store's pool under ``--max-connections`` (docs/worker.md, Connections):
        what is left after the heartbeat's connection, the claim connection and the LISTEN
        connection (none in a workgroup child whose supervisor relays wake-ups)."""
        listening = 0 if self._wake_fd is not None else LISTEN_CONNECTIONS
        return self.config.max_connections - HEARTBEAT_CONNECTIONS - CLAIM_CONNECTIONS - listening

    async def _check_actor_configs(self, store: Store, registry: Registry) -> None:
        """Record this code's actor options. How a job runs changes with the code (logged
        once, by the one worker that wrote it); where jobs go (a queue) only when forced."""
        force = self.config.force_update_actor_config
        differences = await store.sync_actor_configs([a.config() for a in registry], force=force)
        refused = [d for d in differences if d.routes]
        if refused and not force:
            raise ActorConfigDrift(routing_refusal(refused))
        if differences:
            log.event(ACTOR_CONFIG_UPDATED, differences=[str(d) for d in differences])

    def _build(
        self, stores: Stores, registry: Registry, middleware: list[Middleware]
    ) -> list[Part]:
        """The worker's parts, in start order (each is stopped after those listed below it).

        To add a part: build it here, in its place in the list (``lifecycle.Part``).
        """
        config = self.config
        store, hb_store = stores.stores
        info = WorkerInfo(
            id=self.id,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            queues=self.queues,
            worker_label=config.worker_label,
            workgroup_instance=config.workgroup_instance,
            max_connections=config.max_connections if store.kind == "postgres" else None,
        )
        threads = ThreadRunner()
        backlog = _backlog(store, config, self.id, self.queues)
        consumed = self.consumed
        cpu_actors = frozenset(a.name for a in consumed if a.cpu_bound)
        # a pool only where a consumed queue has a cpu_bound actor
        cpu = CpuRunner(config, needed=bool(cpu_actors))
        cancels = Cancels()
        relay = [] if self._wake_fd is None else [RelayedWakeups(self._wake_fd)]
        wakeups: Wakeups = relay[0] if relay else store
        solo = Solo()  # jobs blamed for a shared death re-run with nothing beside them
        chain = MiddlewareChain(middleware)
        executor = Executor(
            registry,
            threads,
            cpu,
            config.result_max_bytes,
            cancels=cancels,
            solo=solo,
            in_thread=chain.in_thread if chain.has_thread_hooks else None,
            upstream=store.upstream_results,
        )
        share, refill_at, pace = None, None, None
        processes = config.cpu_processes
        if cpu_actors and len(cpu_actors) < len(consumed):  # cpu and other actors: a share
            share = CpuShare(cpu_actors, processes, self.concurrency)
        elif cpu_actors:  # cpu actors only: claims in batches (at the default, paced)
            refill_at = cpu_refill(processes, self.concurrency)
            if refill_at is not None and config.max_concurrency is None:
                pace = ClaimPace.for_pool(processes, self.concurrency, refill_at)
        buffer = self.buffer = JobBuffer(self.concurrency, config.prefetch, share, refill_at, pace)
        acker = self.acker = Acker(store, self.id, in_flight=lambda: buffer.in_flight)
        heartbeat = self.heartbeat = Heartbeat(
            hb_store,
            info,
            interval=config.heartbeat_interval,
            lease=config.lease,
            connections=lambda: _open_connections(store, hb_store),
        )

        def spawn(index: int, on_success: Callable[[], None]) -> Consumer:
            return Consumer(
                index,
                buffer=buffer,
                executor=executor,
                acker=acker,
                middleware=chain,
                stopping=lambda: supervisor.stopping,
                on_success=on_success,
            )

        supervisor = self.supervisor = TaskSupervisor(
            self.concurrency,
            spawn,
            grace=config.shutdown_grace,
            policy=self._restart_policy,
        )
        self.fetcher = Fetcher(
            store,
            self.id,
            self.queues,
            buffer,
            acker.give_back,
            lease=config.lease,
            poll_interval=config.poll_interval,
            excluded_actors=lambda: cpu.excluded_actors,
            # no claims while the heartbeat cannot extend their leases
            # and none while a job waits to run alone, or runs alone
            can_claim=lambda: (
                acker.pending < MAX_ACK_BACKLOG
                and not heartbeat.in_outage
                and solo.claiming_allowed
            ),
            wakeups=wakeups,
        )
        return [
            stores,  # opened first (with the checks), closed last
            self._reload,
            *([] if self._parent is None else [ParentWatch(self._parent, self.request_stop)]),
            HealthServer(
                ready=self._ready,
                port=config.health_port,
                host=config.health_host,
                socket_path=config.health_socket_path,
                registry=metrics.BARE_WORKER if backlog else metrics.WORKER,
            ),
            heartbeat,  # registers the row first, removes it last
            acker,
            *backlog,
            Rescuer(
                store,
                interval=min(config.rescue_interval, max(config.lease / 2, 0.5)),
                worker_id=self.id,
                quiet_after_outage=config.lease,
            ),
            Pruner(
                store,
                prune_interval=config.prune_interval,
                keep_succeeded=config.keep_succeeded,
                keep_dead=config.keep_dead,
                keep_cancelled=config.keep_cancelled,
                keep_silent_workers=config.keep_silent_workers,
                vacuum_after_prune=config.vacuum_after_prune,
            ),
            LagMonitor(self._running_actors),
            threads,
            cpu,
            *relay,  # the supervisor's wake-ups (a workgroup child with TASKQ_PG_DSN_DIRECT)
            CancelWatcher(store, self.id, cancels, wakeups=wakeups),  # until the consumers end
            supervisor,
            self.fetcher,  # no claims once a stop is asked for
            # the first to stop: no periodic tick is enqueued once shutdown began
            *_scheduler(store, registry),
        ]

    async def _serve(self, stores: Stores, registry: Registry, middleware: list[Middleware]) -> int:
        parts = self._parts = Parts(self._build(stores, registry, middleware))
        store = stores.stores[0]
        stop_event = self._stop_event
        assert stop_event is not None  # set by run()
        try:
            await parts.start()
            log.event(
                WORKER_STARTED,
                worker_id=str(self.id),
                pid=os.getpid(),
                queues=self.queues,
                concurrency=self.concurrency,
                label=self.config.worker_label,
                group=self.config.worker_group,
                store=store.display_dsn,
                actors=len(registry),
            )
            self._judge(await parts.wait(stop_event))
            self.shutting_down = True
            if self._stop_requests > 1:
                parts.hurry()
            await parts.stop()
        finally:
            self.shutting_down = True
            await parts.abort()
        log.event(
            WORKER_STOPPED,
            worker_id=str(self.id),
            exit_code=self.exit_code,
            reason=self._stop_reason,
        )
        return self.exit_code

    def _judge(self, ended: list[Ended]) -> None:
        """Parts that ended before a stop was asked for: the crash-loop guard, or a failure."""
        for part in ended:
            if isinstance(part.error, CrashLoop):
                self.exit_code = exit_codes.CRASH_LOOP
                self._stop_reason = self._stop_reason or "crash-loop-guard"
                continue
            exc = part.error
            log.event(
                WORKER_PART_DIED,
                part=part.name,
                error=f"{type(exc).__name__}: {exc}" if exc else "ended",
                exc_info=exc,
            )
            self.exit_code = exit_codes.COMPONENT_FAILED
            self._stop_reason = self._stop_reason or f"{part.name} died"

    # -- views ------------------------------------------------------------------------
    @property
    def running(self) -> dict[UUID, ClaimedJob]:
        """The jobs the consumers run now, by id (read by the lag monitor's thread too:
        each consumer's ``held`` is one attribute, read once)."""
        supervisor = self.supervisor
        if supervisor is None:
            return {}
        held = [consumer.held for consumer in list(supervisor.members.values())]
        return {job.id: job for job in held if job is not None}

    def _running_actors(self) -> list[str]:
        return sorted({job.actor for job in self.running.values()})

    async def _ready(self) -> tuple[bool, str]:
        """Ready: every part started (the consumers wait for jobs, the fetcher claims), a
        consumer is alive and the store answers."""
        if self.shutting_down or self._stop_reason is not None:
            return False, "shutting down"
        parts, supervisor = self._parts, self.supervisor
        if self.store is None or parts is None or parts.state("fetcher") is not PartState.RUNNING:
            return False, "starting: the consumers do not claim yet"
        if supervisor is not None and supervisor.alive == 0:
            return False, "no consumer alive (they keep dying: see the `worker died` lines)"
        try:
            await asyncio.wait_for(self.store.ping(), READY_PING_TIMEOUT)
        except (TaskqError, TimeoutError) as exc:
            return False, f"store unavailable: {type(exc).__name__}: {exc}"
        return True, "ready"
