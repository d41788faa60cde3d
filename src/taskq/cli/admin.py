"""``taskq migrate``, ``taskq schedules``, ``taskq demo`` and ``taskq dashboard``: the
schema, the periodic schedules, the tour and the web view."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..exceptions import TaskqError
from . import args
from .output import EXIT_OK, print_json, print_table, with_client

if TYPE_CHECKING:
    from ..client import AsyncClient


def add_migrate(sub: args.Subparsers) -> None:
    sub.add_parser("migrate", help="create or upgrade the schema (idempotent)").set_defaults(
        run=cmd_migrate
    )


def add_schedules(sub: args.Subparsers) -> None:
    schedules = sub.add_parser(
        "schedules", help="list periodic schedules (as workers recorded them) and next runs"
    )
    schedules.set_defaults(run=cmd_schedules)
    args.json_flag(schedules, "a JSON array of schedules")


def add_demo(sub: args.Subparsers) -> None:
    sub.add_parser("demo", help="a self-contained tour on SQLite").set_defaults(run=cmd_demo)


def add_dashboard(sub: args.Subparsers) -> None:
    dash = sub.add_parser("dashboard", help="serve the web dashboard (the taskq[web] extra)")
    dash.set_defaults(run=cmd_dashboard)
    dash.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    dash.add_argument("--port", type=int, default=8760, help="port (default 8760)")
    dash.add_argument(
        "--allow-actions",
        action="store_true",
        help="enable retry/discard/cancel and queue controls (needs TASKQ_DASHBOARD_TOKEN)",
    )
    dash.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        dest="allowed_hosts",
        help="a host name the dashboard answers to besides its address and localhost (the "
        "name a reverse proxy or a browser uses), repeatable",
    )


def cmd_migrate(ns: argparse.Namespace) -> int:
    async def go(client: AsyncClient) -> list[str]:
        return await client.store.migrate()

    applied = with_client(ns, go)
    print(f"applied migrations: {', '.join(applied)}" if applied else "schema is up to date")
    return EXIT_OK


def cmd_schedules(ns: argparse.Namespace) -> int:
    from ..periodic import listing

    async def go(client: AsyncClient) -> list[dict[str, Any]]:
        infos = await client.store.list_schedules()
        now = await client.store.now()
        return [listing(info, now) for info in infos]

    rows = with_client(ns, go)
    if ns.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        print("no schedules recorded (a worker records its registry's schedules when it starts)")
        return EXIT_OK
    print_table(
        "{:<24.24} {:<18.18} {:<16.16} {:<26} {:<26} {}",
        ("name", "cron", "timezone", "next_run", "last_tick", "missed"),
        (
            (
                r["name"],
                r["cron"],
                r["timezone"],
                r["next_run"] or "-",
                r["last_tick"] or "-",
                r["missed"],
            )
            for r in rows
        ),
    )
    return EXIT_OK


def cmd_demo(ns: argparse.Namespace) -> int:
    from ..demo import run_demo

    return run_demo()


def cmd_dashboard(ns: argparse.Namespace) -> int:
    try:
        from ..web.serve import serve
    except ImportError as exc:
        raise TaskqError(
            f"the dashboard needs the web extra ({exc.name} is missing): pip install 'taskq[web]'"
        ) from None
    if not 0 <= ns.port <= 65535:
        raise TaskqError(f"--port {ns.port} is not a port number")
    return serve(
        host=ns.host,
        port=ns.port,
        allow_actions=ns.allow_actions,
        dsn=ns.dsn,
        schema=ns.schema,
        allowed_hosts=tuple(ns.allowed_hosts),
    )
