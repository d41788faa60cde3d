"""Which Postgres a case runs on.

Every case runs on the bench server (``TASKQ_BENCH_PG_DSN``) but one whose verdict needs
Postgres's default vacuum settings (``Case.default_server``: the soak). When the bench
server has autovacuum off (as this machine's CI server has, for the test suite's
speed), nothing reclaims a pruned row there and the soak's verdict would say nothing
about taskq: such a case runs on a throwaway cluster built from the machine's Postgres
binaries instead (``scripts/ensure_postgres.py``'s ``ThrowawayCluster``: ``initdb``
defaults, a free port, under ``.pgtmp/``), stopped and removed when the case ends, also
on a failure, Ctrl-C or SIGTERM. The case's results say which server it ran on, why, and
that server's settings.
"""

from __future__ import annotations

import os
import signal
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from . import pgadmin

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # scripts/ is not a package of its own
    sys.path.insert(0, str(ROOT))

from scripts.ensure_postgres import ThrowawayCluster  # noqa: E402

BENCH_SERVER = "the bench server"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _autovacuum_on(settings: dict[str, dict[str, object]] | None) -> bool:
    return (settings or {}).get("autovacuum", {}).get("value") == "on"


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no server log"
    return lines[-1] if lines else "empty server log"


def _describe(dsn: str, where: str, why: str) -> dict[str, object]:
    return {
        "where": where,
        "why": why,
        "postgres": pgadmin.server_version(dsn),
        "settings": pgadmin.settings(dsn),
    }


@contextmanager
def _terminated_like_interrupted() -> Iterator[None]:
    """SIGTERM unwinds like Ctrl-C while a cluster of ours runs, so it is removed."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def default_vacuum_server(
    admin_dsn: str, settings: dict[str, dict[str, object]] | None
) -> Iterator[tuple[str, dict[str, object]]]:
    """An admin DSN for a server that runs autovacuum, and what it is: the bench server
    when it does, else a throwaway cluster (the bench server again, with the reason,
    when no cluster can be started)."""
    if _autovacuum_on(settings):
        yield admin_dsn, _describe(admin_dsn, BENCH_SERVER, "it runs autovacuum")
        return
    cluster = ThrowawayCluster(ROOT / ".pgtmp" / f"bench-{os.getpid()}", free_port())
    with _terminated_like_interrupted():
        try:
            dsn = cluster.start() if cluster.available else None
            if dsn is None:
                reason = (
                    "no Postgres binaries (initdb, pg_ctl) to start a throwaway cluster"
                    if not cluster.available
                    else f"a throwaway cluster did not start: {_last_line(cluster.log)}"
                )
                yield admin_dsn, _describe(admin_dsn, BENCH_SERVER, reason)
                return
            where = (
                f"a throwaway cluster (initdb from the machine's Postgres binaries, port "
                f"{cluster.port})"
            )
            yield dsn, _describe(dsn, where, "the bench server has autovacuum off")
        finally:
            cluster.remove()
