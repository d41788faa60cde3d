"""Everything a worker process is started with (the ``taskq worker`` flags)."""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    actors: str  # MODULE:ATTR of a taskq.Registry
    queues: tuple[str, ...] = ()  # empty: every queue the registry's actors use
    max_concurrency: int = 10
    poll_interval: float = 1.0  # fallback poll when no NOTIFY arrives
    worker_group: str = "default"
    worker_label: str | None = None
    workgroup_instance: UUID | None = None
    health_port: int | None = None
    health_socket_path: str | None = None
    heartbeat_interval: float = 2.0
    lease: float = 10.0
    shutdown_grace: float = 30.0
    force_update_actor_config: bool = False
    dsn: str | None = None  # None: TASKQ_DSN_FILE / TASKQ_DSN / default
    schema: str | None = None  # None: TASKQ_SCHEMA / "taskq"
    # CPU process pool for cpu_bound actors
    cpu_workers: int | None = None  # None: os.cpu_count()
    cpu_max_tasks_per_child: int | None = 1000
    cpu_max_memory_per_child_mib: int | None = None
    cpu_max_payload_bytes: int = 64 * 1024 * 1024
    # maintenance
    sweep_interval: float = 5.0
    retention_succeeded: float = 7 * 24 * 3600.0  # seconds to keep succeeded jobs
    retention_dead: float | None = 30 * 24 * 3600.0  # seconds to keep dead jobs (None: forever)
    retention_cancelled: float | None = 7 * 24 * 3600.0  # ... cancelled jobs (None: forever)
    extra: dict[str, str] = field(default_factory=dict)
    # worker internals (no CLI flag yet; defaults are what `taskq worker` runs with)
    middleware: tuple[str, ...] = ()  # MODULE:ATTR references of worker middleware
    health_host: str = "0.0.0.0"  # interface --health-port binds to
    prefetch: int | None = 0  # claimed-but-unstarted jobs beyond free consumers (None: adaptive)
    retention_workers: float = 600.0  # seconds before a silent worker row is pruned
    prune_interval: float = 60.0  # seconds between prune passes
    result_max_bytes: int = 64 * 1024  # larger job results are dropped (with a warning)
