"""Everything a worker process is started with: ``WorkerConfig``, one line per option.

Each option (its type, default, flag, TOML key, help and check) is declared once, here;
``taskq worker``'s flags, a workgroup's ``[defaults]`` / ``[[workers]]`` keys, a workgroup
child's command line and the tables of docs/worker.md and docs/workgroups.md are made
from it (``taskq.options``), and ``WorkerConfig.validate`` is the one check they all run.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING
from uuid import UUID

from .. import options
from ..exceptions import ConfigError
from ..kinds import (
    Id,
    Integer,
    Port,
    Prefetch,
    Queues,
    References,
    Seconds,
    Switch,
    Text,
)
from ..options import flag, option, required
from ..procpool.limits import MAX_PAYLOAD_BYTES, MAX_TASKS_PER_CHILD, pool_size
from .buffer import CPU_BATCH_PACED, CPU_REFILL, CPU_SHARE

if TYPE_CHECKING:
    from ..registry import AnyActor

#: ``--max-concurrency`` when not given: consumers of a registry whose actors are all
#: ``async`` (an idle consumer is one coroutine waiting on a queue: it costs nothing, and
#: each claim round trip brings up to this many jobs), and of any other registry (sync
#: actors each take a thread while they run).
DEFAULT_ASYNC_CONCURRENCY = 64
DEFAULT_CONCURRENCY = 10


def default_concurrency(actors: Iterable[AnyActor], processes: int | None = None) -> int:
    """What ``max_concurrency=None`` means for a worker of ``actors`` (its registry's) whose
    CPU pool has ``processes`` (default ``os.cpu_count()``). With
    ``cpu_bound`` actors it grows with the pool, so a pool of many processes is fed
    (``buffer.py``): ``cpu_bound`` actors only, ``CPU_REFILL`` x N (running, piped) plus
    a claim of up to ``CPU_BATCH_PACED`` (N + 2 on a larger pool); beside other actors,
    twice the cpu share (``CPU_SHARE`` x N), as the share is at most half the consumers.
    Never below ``DEFAULT_CONCURRENCY``."""
    actors = list(actors)
    if all(actor.is_async and not actor.cpu_bound for actor in actors):
        return DEFAULT_ASYNC_CONCURRENCY
    cpu = sum(1 for actor in actors if actor.cpu_bound)
    if not cpu:
        return DEFAULT_CONCURRENCY
    n = pool_size(processes)
    if cpu == len(actors):
        return max(DEFAULT_CONCURRENCY, CPU_REFILL * n + max(CPU_BATCH_PACED, n + 2))
    return max(DEFAULT_CONCURRENCY, 2 * CPU_SHARE * n)


#: ``taskq workers --stale-after`` and a workgroup child's ``[workers.health] stale_after``:
#: a worker row (a heartbeat) older than this means its process is gone or hung
STALE_AFTER = 60.0

#: what one worker's Postgres connections are for (``--max-connections``; docs/worker.md,
#: "Connections"): the pool gets what the others leave, at least one
HEARTBEAT_CONNECTIONS = 1  # its own: a busy pool never delays a beat
CLAIM_CONNECTIONS = 1  # its own: the claim's planner settings, one claim at a time
LISTEN_CONNECTIONS = 1  # new jobs and cancels, one connection (none in a relayed child)
MIN_CONNECTIONS = HEARTBEAT_CONNECTIONS + CLAIM_CONNECTIONS + LISTEN_CONNECTIONS + 1
DEFAULT_MAX_CONNECTIONS = 6

_POSITIVE = Seconds(positive=True)
_SECONDS = Seconds()
_FOREVER = Seconds(forever=True)
_COUNT = Integer(minimum=1)


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    """Every option of a worker, each declared once (``taskq.options``): the ``taskq
    worker`` flags, a workgroup's TOML keys, a workgroup child's command line and the
    docs' tables are made from these lines. Adding an option is adding one line here
    (and reading it where the worker uses it). ``toml=False``: a workgroup sets it for
    each child itself (or, ``dsn``/``schema``, the whole ``taskq`` command has it)."""

    actors: str = required(Text("MODULE:ATTR"), "the `taskq.Registry` to serve", toml=False)
    queues: tuple[str, ...] = option(
        (), Queues(), "queues to claim from", shown="every queue of the registry's actors"
    )
    max_concurrency: int | None = option(
        None,
        _COUNT,
        "consumer tasks: jobs running at once",
        shown=f"{DEFAULT_ASYNC_CONCURRENCY} when every actor is async, else {DEFAULT_CONCURRENCY}; "
        "more with cpu_bound actors, by the pool's size",
    )
    poll_interval: float = option(
        1.0, _POSITIVE, "seconds between claims when idle (LISTEN/NOTIFY wakes it sooner)"
    )
    worker_group: str = option(
        "default", Text("G"), "a group name for logs and dashboards (`group` in worker-started)"
    )
    worker_label: str | None = option(
        None,
        Text("L"),
        "shown by `taskq workers`; a workgroup gives each child its name",
        toml=False,
    )
    workgroup_instance: UUID | None = option(
        None, Id(), "set by a workgroup supervisor: the worker exits with it", toml=False
    )
    health_port: int | None = option(
        None,
        Port(),
        "serve /live /ready /metrics on TCP port N (0: pick one, logged)",
        toml=False,
        shown="off",
        exclusive="health",
    )
    health_socket_path: str | None = option(
        None,
        Text("P"),
        "serve /live /ready /metrics on this Unix socket",
        toml=False,
        shown="off",
        exclusive="health",
    )
    health_host: str = option(
        "127.0.0.1",
        Text("ADDR"),
        "the interface --health-port binds to (0.0.0.0: every interface, as a container's "
        "probes and scrapers need)",
        toml=False,
    )
    heartbeat_interval: float = option(
        2.0,
        _POSITIVE,
        "seconds between heartbeats (each extends every lease); shorter than --lease (a "
        "workgroup child's is at most a third of its stale_after)",
    )
    lease: float = option(10.0, _POSITIVE, "seconds a claimed job stays ours without a heartbeat")
    shutdown_grace: float = option(
        30.0,
        _SECONDS,
        "seconds running jobs get to finish after SIGTERM (a workgroup child's comes from "
        "the supervisor's shutdown_grace)",
        toml=False,
    )
    force_update_actor_config: bool = option(
        False,
        Switch(),
        "also record a change of where an actor's jobs go (its queue), which is refused "
        "without it; other changed actor options are recorded anyway (for one deploy)",
    )
    prefetch: int | None = option(
        0,
        Prefetch(),
        "claimed jobs that may wait beyond the free consumers (`auto`: up to one per "
        "consumer while jobs take under 5 ms)",
    )
    middleware: tuple[str, ...] = option(
        (), References(), "worker middleware, repeatable (also TASKQ_WORKER_MIDDLEWARE)"
    )
    max_connections: int = option(
        DEFAULT_MAX_CONNECTIONS,
        Integer(minimum=MIN_CONNECTIONS),
        "the most Postgres connections this worker opens: heartbeat 1, claims 1, LISTEN 1 "
        "(none in a workgroup child whose supervisor relays it), the rest a pool shared by "
        "acks and upkeep (docs/worker.md, Connections)",
    )
    dsn: str | None = option(None, Text("DSN"), "the store", flag=False, toml=False)
    schema: str | None = option(None, Text("NAME"), "its schema", flag=False, toml=False)
    # the CPU process pool for cpu_bound actors
    cpu_workers: int | None = option(
        None,
        _COUNT,
        "processes in the CPU pool (started only when a consumed queue has a cpu_bound "
        "actor, or at the first cpu_bound job)",
        shown="cores",
    )
    cpu_nice: int = option(
        10,
        Integer(minimum=0, maximum=19),
        "niceness the CPU pool processes add to the worker's, and above 0 long scheduler "
        "slices (Linux 6.12+): while they saturate the cores, the worker's event loop "
        "(heartbeats, claims, other actors' jobs) and a waking database backend run first "
        "(0: they compete equally)",
    )
    cpu_max_tasks_per_child: int | None = option(
        MAX_TASKS_PER_CHILD, _COUNT, "a CPU pool process is replaced after N jobs"
    )
    cpu_max_memory_per_child: int | None = option(
        None,
        Integer(minimum=1, metavar="MIB"),
        "a CPU pool process is replaced after a job that left its RSS above this (MiB)",
        shown="off",
    )
    cpu_max_payload_bytes: int = option(
        MAX_PAYLOAD_BYTES, _COUNT, "the largest arguments a cpu_bound job sends its process"
    )
    result_max_bytes: int = option(
        64 * 1024, _COUNT, "a larger job result is dropped (with a warning)"
    )
    rescue_interval: float = option(
        5.0, _POSITIVE, "seconds between rescues of expired leases (at most half the lease)"
    )
    # pruning (docs/worker.md, "Pruning")
    prune_interval: float = option(60.0, _POSITIVE, "seconds between this worker's prune passes")
    keep_succeeded: float = option(
        7 * 24 * 3600.0, _SECONDS, "a succeeded job is pruned this long after it finished"
    )
    keep_dead: float | None = option(
        30 * 24 * 3600.0, _FOREVER, "a dead job is pruned this long after it ended"
    )
    keep_cancelled: float | None = option(
        7 * 24 * 3600.0, _FOREVER, "a cancelled job is pruned this long after it ended"
    )
    keep_silent_workers: float = option(
        600.0,
        _POSITIVE,
        "a worker row without heartbeats this long (and no running job) is pruned; longer "
        "than --heartbeat-interval",
    )
    vacuum_after_prune: bool = option(
        False,
        Switch(),
        "Postgres with autovacuum off for the jobs table: VACUUM it after each prune pass "
        "(docs/operating.md)",
    )

    @property
    def cpu_processes(self) -> int:
        """Processes in the CPU pool: ``cpu_workers``, or one a core."""
        return pool_size(self.cpu_workers)

    def problems(
        self, name: Callable[[str], str] = flag, only: Collection[str] | None = None
    ) -> list[str]:
        """Everything wrong with this config, each option named by ``name`` (``flag``:
        ``--lease``; ``options.key``: ``"lease"``; ``only``: check just these options
        one by one, and every rule between options); the one check every entry point runs."""
        found = options.problems(self, WorkerConfig, name, only)
        if self.heartbeat_interval >= self.lease:
            found.append(
                f"{name('heartbeat_interval')} ({self.heartbeat_interval:g}) must be shorter "
                f"than {name('lease')} ({self.lease:g})"
            )
        if self.keep_silent_workers <= self.heartbeat_interval:
            found.append(
                f"{name('keep_silent_workers')} ({self.keep_silent_workers:g}) must be longer "
                f"than {name('heartbeat_interval')} ({self.heartbeat_interval:g}): a live "
                "worker's row would be pruned between two heartbeats"
            )
        if self.health_port is not None and self.health_socket_path is not None:
            found.append(f"give {name('health_port')} or {name('health_socket_path')}, not both")
        return found

    def validate(self, name: Callable[[str], str] = flag) -> None:
        """``ConfigError`` naming the first problem (``problems``)."""
        found = self.problems(name)
        if found:
            raise ConfigError(found[0])


#: every default, for whoever needs one without a config (``actors`` is a stand-in)
WORKER_DEFAULTS = WorkerConfig(actors="")
