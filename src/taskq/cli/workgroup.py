"""``taskq worker``, ``taskq workgroup start|validate`` and ``taskq workers``: running,
supervising and listing worker processes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..exceptions import ConfigError
from ..worker.config import WORKER_DEFAULTS as _WORKER
from ..worker.config import duration_text
from . import args
from .output import EXIT_OK, print_json, print_table, with_client

if TYPE_CHECKING:
    from ..client import AsyncClient
    from ..worker.config import WorkerConfig


def add_worker(sub: args.Subparsers) -> None:
    w = sub.add_parser("worker", help="run a worker process")
    w.set_defaults(run=cmd_worker)
    add_worker_flags(w)


def add_worker_flags(w: argparse.ArgumentParser, *, actors_default: str | None = None) -> None:
    """Every ``taskq worker`` flag (also ``manage.py taskq_worker``'s; ``--actors`` is
    required unless given a default)."""
    w.add_argument(
        "--actors",
        required=actors_default is None,
        default=actors_default,
        metavar="MODULE:ATTR",
        help="the taskq.Registry to serve",
    )
    w.add_argument(
        "--queues",
        type=args.queue_list,
        default=(),
        metavar="A,B",
        help="queues to consume (default: every queue of the registry's actors)",
    )
    w.add_argument(
        "--max-concurrency",
        type=args.positive_int,
        default=_WORKER.max_concurrency,
        metavar="N",
        help="jobs run at once by this worker (default: 64 when every actor is async, else 10)",
    )
    w.add_argument(
        "--poll-interval",
        type=args.positive_seconds,
        default=_WORKER.poll_interval,
        metavar="S",
        help="seconds between claims when idle (LISTEN/NOTIFY wakes it sooner on Postgres)",
    )
    w.add_argument(
        "--worker-group",
        default=_WORKER.worker_group,
        metavar="G",
        help="group name for logs and dashboards (logged as `group` in worker-started)",
    )
    w.add_argument(
        "--worker-label",
        default=None,
        metavar="L",
        help="label shown in `taskq workers` (default: none; a workgroup gives its name)",
    )
    w.add_argument(
        "--workgroup-instance",
        type=args.uuid,
        default=None,
        metavar="UUID",
        help="set by a workgroup supervisor: the worker exits with it (default: none)",
    )
    health = w.add_mutually_exclusive_group()
    health.add_argument(
        "--health-port",
        type=args.port,
        default=None,
        metavar="N",
        help="serve /live /ready /metrics on TCP port N, 0 picks one (default: off)",
    )
    health.add_argument(
        "--health-socket-path",
        default=None,
        metavar="P",
        help="serve /live /ready /metrics on this Unix socket (default: off)",
    )
    w.add_argument(
        "--health-host",
        default=_WORKER.health_host,
        metavar="ADDR",
        help="interface --health-port binds to",
    )
    w.add_argument(
        "--heartbeat-interval",
        type=args.positive_seconds,
        default=_WORKER.heartbeat_interval,
        metavar="S",
        help="seconds between heartbeats (each extends every lease); shorter than --lease",
    )
    w.add_argument(
        "--lease",
        type=args.positive_seconds,
        default=_WORKER.lease,
        metavar="S",
        help="seconds a claimed job stays ours without a heartbeat",
    )
    w.add_argument(
        "--shutdown-grace",
        type=args.seconds,
        default=_WORKER.shutdown_grace,
        metavar="S",
        help="seconds running jobs get to finish after SIGTERM",
    )
    w.add_argument(
        "--force-update-actor-config",
        action="store_true",
        help="start even if the stored actor options differ from the registry's, and "
        "overwrite them",
    )
    w.add_argument(
        "--prefetch",
        type=args.prefetch,
        default=_WORKER.prefetch,
        metavar="N|auto",
        help="claimed jobs that may wait beyond the free consumers "
        "('auto': up to one per consumer while jobs take under 5 ms)",
    )
    w.add_argument(
        "--middleware",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="worker middleware, repeatable (default: none, plus TASKQ_WORKER_MIDDLEWARE)",
    )
    w.add_argument(
        "--cpu-workers",
        type=args.positive_int,
        default=None,
        metavar="N",
        help="processes in the CPU pool for cpu_bound actors (default: cores)",
    )
    w.add_argument(
        "--cpu-max-tasks-per-child",
        type=args.positive_int,
        default=_WORKER.cpu_max_tasks_per_child,
        metavar="N",
        help="a CPU pool process is replaced after N jobs",
    )
    w.add_argument(
        "--cpu-max-memory-per-child",
        type=args.positive_int,
        default=None,
        metavar="MIB",
        help="a CPU pool process is replaced after a job that left it above this RSS "
        "(default: off)",
    )
    _add_pruning(w)


def _default(seconds: float | None) -> str:
    if seconds is None:
        return "(default: forever)"
    number = f"{seconds:.0f}" if seconds.is_integer() else f"{seconds:g}"
    return f"(default: {number}, {duration_text(seconds)})"


def _add_pruning(w: argparse.ArgumentParser) -> None:
    """The retention flags: what the worker's sweeper deletes, and how often."""
    w.add_argument(
        "--prune-interval",
        type=args.positive_seconds,
        default=_WORKER.prune_interval,
        metavar="S",
        help="seconds between this worker's prune passes " + _default(_WORKER.prune_interval),
    )
    w.add_argument(
        "--keep-succeeded",
        type=args.seconds,
        default=_WORKER.retention_succeeded,
        metavar="S",
        help="seconds a succeeded job is kept after it finished, then pruned "
        + _default(_WORKER.retention_succeeded),
    )
    w.add_argument(
        "--keep-dead",
        type=args.seconds_or_forever,
        default=_WORKER.retention_dead,
        metavar="S|forever",
        help="seconds a dead job is kept after it ended ('forever': never pruned) "
        + _default(_WORKER.retention_dead),
    )
    w.add_argument(
        "--keep-cancelled",
        type=args.seconds_or_forever,
        default=_WORKER.retention_cancelled,
        metavar="S|forever",
        help="seconds a cancelled job is kept after it ended ('forever': never pruned) "
        + _default(_WORKER.retention_cancelled),
    )
    w.add_argument(
        "--keep-silent-workers",
        type=args.positive_seconds,
        default=_WORKER.retention_workers,
        metavar="S",
        help="seconds a worker row without heartbeats (and no running job) is kept; longer "
        "than --heartbeat-interval " + _default(_WORKER.retention_workers),
    )
    w.add_argument(
        "--vacuum-after-prune",
        action="store_true",
        help="Postgres with autovacuum off for the jobs table: VACUUM it after each prune "
        "pass (needs the table's owner; see docs/operating.md)",
    )


def add_workgroup(sub: args.Subparsers) -> None:
    wg = sub.add_parser("workgroup", help="supervise worker processes from a TOML file")
    wg.set_defaults(run=cmd_workgroup)
    wg_sub = args.subcommands(wg, "workgroup_command", "start|validate", required=True)
    wg_sub.add_parser("start", help="run the supervisor").add_argument("file")
    wg_sub.add_parser("validate", help="check the file and print a summary").add_argument("file")


def add_workers(sub: args.Subparsers) -> None:
    workers = sub.add_parser("workers", help="list registered worker processes")
    workers.set_defaults(run=cmd_workers)
    args.json_flag(workers, "a JSON array of worker rows")
    workers.add_argument(
        "--stale-after",
        type=args.positive_seconds,
        default=30.0,
        metavar="S",
        help="a row not seen for longer is shown `stale`: its process is gone or cut off "
        "(a live worker touches it every --heartbeat-interval, 2 s by default)",
    )


def cmd_worker(ns: argparse.Namespace) -> int:
    from ..worker.main import run

    return run(worker_config(ns))


def worker_config(ns: argparse.Namespace) -> WorkerConfig:
    """The ``WorkerConfig`` of parsed worker flags (``add_worker_flags``), checked."""
    from ..worker.config import WorkerConfig

    config = WorkerConfig(
        actors=ns.actors,
        queues=ns.queues,
        max_concurrency=ns.max_concurrency,
        poll_interval=ns.poll_interval,
        worker_group=ns.worker_group,
        worker_label=ns.worker_label,
        workgroup_instance=ns.workgroup_instance,
        health_port=ns.health_port,
        health_socket_path=ns.health_socket_path,
        heartbeat_interval=ns.heartbeat_interval,
        lease=ns.lease,
        shutdown_grace=ns.shutdown_grace,
        force_update_actor_config=ns.force_update_actor_config,
        dsn=ns.dsn,
        schema=ns.schema,
        cpu_workers=ns.cpu_workers,
        cpu_max_tasks_per_child=ns.cpu_max_tasks_per_child,
        cpu_max_memory_per_child_mib=ns.cpu_max_memory_per_child,
        health_host=ns.health_host,
        prefetch=ns.prefetch,
        middleware=tuple(ns.middleware),
        prune_interval=ns.prune_interval,
        retention_succeeded=ns.keep_succeeded,
        retention_dead=ns.keep_dead,
        retention_cancelled=ns.keep_cancelled,
        retention_workers=ns.keep_silent_workers,
        vacuum_after_prune=ns.vacuum_after_prune,
    )
    if config.heartbeat_interval >= config.lease:
        raise ConfigError("--heartbeat-interval must be shorter than --lease")
    if config.retention_workers <= config.heartbeat_interval:
        raise ConfigError(
            "--keep-silent-workers must be longer than --heartbeat-interval "
            "(a live worker's row would be pruned between two heartbeats)"
        )
    return config


def cmd_workgroup(ns: argparse.Namespace) -> int:
    from .. import workgroup

    if ns.dsn or ns.schema:
        raise ConfigError(
            "workgroup takes its store from the TOML file or TASKQ_DSN, not --dsn/--schema"
        )
    if ns.workgroup_command == "validate":
        return workgroup.validate_main(ns.file)
    return workgroup.start_main(ns.file)


def cmd_workers(ns: argparse.Namespace) -> int:
    async def rows_and_now(client: AsyncClient) -> tuple[list[Any], Any]:
        return await client.store.insight.list_workers(), await client.store.now()

    rows, now = with_client(ns, rows_and_now)

    def status(row: Any) -> tuple[str, float | None]:
        if row.last_seen_at is None:
            return "stale", None
        ago = max((now - row.last_seen_at).total_seconds(), 0.0)
        return ("alive" if ago <= ns.stale_after else "stale"), round(ago, 1)

    if ns.json:
        out = []
        for r in rows:
            state, ago = status(r)
            out.append({**r.to_dict(), "status": state, "last_seen_seconds_ago": ago})
        print_json(out)
        return EXIT_OK
    table = []
    for r in rows:
        state, ago = status(r)
        seen = "-" if ago is None else f"{ago:.0f}s ago"
        table.append(
            (str(r.id), state, r.worker_label or "-", r.pid, r.hostname, seen, ",".join(r.queues))
        )
    print_table(
        "{:<36}  {:<6} {:<16.16} {:>7} {:<20.20} {:>10}  {}",
        ("id", "status", "label", "pid", "hostname", "last_seen", "queues"),
        table,
    )
    return EXIT_OK
