"""Everything a worker process is started with (the ``taskq worker`` flags).

The defaults here are the only ones: ``taskq worker`` and a workgroup's children take
theirs from ``WORKER_DEFAULTS``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

if TYPE_CHECKING:
    from ..registry import Registry

#: ``--max-concurrency`` when not given: consumers of a registry whose actors are all
#: ``async`` (an idle consumer is one coroutine waiting on a queue: it costs nothing, and
#: each claim round trip brings up to this many jobs), and of any other registry (sync
#: actors each take a thread while they run).
DEFAULT_ASYNC_CONCURRENCY = 64
DEFAULT_CONCURRENCY = 10


def default_concurrency(registry: Registry) -> int:
    """What ``max_concurrency=None`` means for this registry."""
    if all(actor.is_async and not actor.cpu_bound for actor in registry):
        return DEFAULT_ASYNC_CONCURRENCY
    return DEFAULT_CONCURRENCY


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    actors: str  # MODULE:ATTR of a taskq.Registry
    queues: tuple[str, ...] = ()  # empty: every queue the registry's actors use
    max_concurrency: int | None = None  # None: default_concurrency(registry)
    poll_interval: float = 1.0  # fallback poll when no NOTIFY arrives
    worker_group: str = "default"  # logged as `group` in worker-started
    worker_label: str | None = None
    workgroup_instance: UUID | None = None
    health_port: int | None = None
    health_socket_path: str | None = None
    health_host: str = "0.0.0.0"  # interface --health-port binds to
    heartbeat_interval: float = 2.0
    lease: float = 10.0
    shutdown_grace: float = 30.0
    force_update_actor_config: bool = False
    prefetch: int | None = 0  # claimed-but-unstarted jobs beyond free consumers (None: adaptive)
    middleware: tuple[str, ...] = ()  # MODULE:ATTR references of worker middleware
    dsn: str | None = None  # None: TASKQ_DSN_FILE / TASKQ_DSN / default
    schema: str | None = None  # None: TASKQ_SCHEMA / "taskq"
    # CPU process pool for cpu_bound actors
    cpu_workers: int | None = None  # None: os.cpu_count()
    cpu_max_tasks_per_child: int | None = 1000
    cpu_max_memory_per_child_mib: int | None = None
    # no flag: in-process use only
    cpu_max_payload_bytes: int = 64 * 1024 * 1024
    sweep_interval: float = 5.0  # never more than half the lease
    # pruning: --prune-interval, --keep-succeeded, --keep-dead, --keep-cancelled,
    # --keep-silent-workers, --vacuum-after-prune (docs/worker.md, "Pruning")
    prune_interval: float = 60.0  # seconds between prune passes
    retention_succeeded: float = 7 * 24 * 3600.0  # seconds to keep succeeded jobs
    retention_dead: float | None = 30 * 24 * 3600.0  # seconds to keep dead jobs (None: forever)
    retention_cancelled: float | None = 7 * 24 * 3600.0  # ... cancelled jobs (None: forever)
    retention_workers: float = 600.0  # seconds before a silent worker row is pruned
    vacuum_after_prune: bool = False  # Postgres with autovacuum off: VACUUM jobs after a prune
    result_max_bytes: int = 64 * 1024  # larger job results are dropped (with a warning)


#: every default, for the command line and the workgroup to read (``actors`` is a stand-in)
WORKER_DEFAULTS = WorkerConfig(actors="")

_UNITS = ((86400, "day", "days"), (3600, "h", "h"), (60, "min", "min"))


def duration_text(seconds: float | None) -> str:
    """A retention or an interval for people: ``7 days``, ``10 min``, ``90 s``; None is
    ``forever``."""
    if seconds is None:
        return "forever"
    for size, one, many in _UNITS:
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {one if n == 1 else many}"
    return f"{seconds:g} s"
