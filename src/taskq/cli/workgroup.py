"""``taskq worker``, ``taskq workgroup start|validate`` and ``taskq workers``: running,
supervising and listing worker processes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from .. import options
from ..exceptions import ConfigError
from ..worker.config import STALE_AFTER
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
    """Every ``taskq worker`` flag, one per ``WorkerConfig`` option (also ``manage.py
    taskq_worker``'s; ``--actors`` is required unless given a default)."""
    from ..worker.config import WorkerConfig

    defaults = {} if actors_default is None else {"actors": actors_default}
    options.add_arguments(w, WorkerConfig, defaults)


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
        default=STALE_AFTER,
        metavar="S",
        help="a row not seen for longer is shown `stale`: its process is gone or cut off "
        "(a live worker touches it every --heartbeat-interval, 2 s by default; a "
        "workgroup's health check uses the same default)",
    )


def cmd_worker(ns: argparse.Namespace) -> int:
    from ..worker.main import run

    return run(worker_config(ns))


def worker_config(ns: argparse.Namespace) -> WorkerConfig:
    """The ``WorkerConfig`` of parsed worker flags (``add_worker_flags``), checked."""
    from ..worker.config import WorkerConfig

    config = WorkerConfig(**options.from_namespace(ns, WorkerConfig), dsn=ns.dsn, schema=ns.schema)
    config.validate()
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


def _connections(now: int | None, most: int | None) -> str:
    """``3/6``: Postgres connections open at the last heartbeat, of at most; ``-`` unknown."""
    if most is None:
        return "-" if now is None else str(now)
    return f"{'-' if now is None else now}/{most}"


def cmd_workers(ns: argparse.Namespace) -> int:
    async def rows_and_now(client: AsyncClient) -> tuple[list[Any], Any]:
        return await client.store.insight.list_workers(), await client.store.now()

    rows, now = with_client(ns, rows_and_now)

    def status(row: Any) -> tuple[str, float | None]:
        return row.status(now, ns.stale_after)  # type: ignore[no-any-return]

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
        conns = _connections(r.connections, r.max_connections)
        table.append(
            (
                str(r.id),
                state,
                r.worker_label or "-",
                r.pid,
                r.hostname,
                seen,
                conns,
                ",".join(r.queues),
            )
        )
    print_table(
        "{:<36}  {:<6} {:<16.16} {:>7} {:<20.20} {:>10} {:>6}  {}",
        ("id", "status", "label", "pid", "hostname", "last_seen", "conns", "queues"),
        table,
    )
    return EXIT_OK
