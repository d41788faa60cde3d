"""The fleet benchmark's servers: a Postgres cluster of its own and a PgBouncer before it.

The cluster is built with ``initdb`` from the machine's binaries (``ThrowawayCluster``,
Postgres's default settings) with ``max_connections`` raised so that the same fleet can
also run direct (about five connections a worker); it is removed at the end. Its
database ``fleet`` is owned by the role ``taskq_fleet`` with ``CONNECTION LIMIT 40``
(lifted only for the direct run), and PgBouncer (``tests/support/pgbouncer.py``: Debian's
``/usr/sbin/pgbouncer`` in transaction mode) forwards to it with a pool smaller than that
limit, leaving room for the supervisors' direct connections (LISTEN and health).
"""

from __future__ import annotations

import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # scripts/ and tests/ are not packages of the install
    sys.path.insert(0, str(ROOT))

from scripts.ensure_postgres import ThrowawayCluster  # noqa: E402
from tests.support.pgbouncer import PgBouncer  # noqa: E402
from tests.support.pgbouncer import installed as pgbouncer_installed  # noqa: E402

from .. import servers  # noqa: E402

DATABASE = "fleet"
ROLE = "taskq_fleet"
SCHEMA = "taskq"


def with_user_and_db(dsn: str, user: str, database: str) -> str:
    parts = urlsplit(dsn)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}@{host}", path="/" + database))


class FleetServers:
    """Start: the cluster, the role and its database (migrated), PgBouncer. Stop: all."""

    def __init__(
        self, workdir: Path, *, role_limit: int, pool_size: int, max_connections: int
    ) -> None:
        self.cluster = ThrowawayCluster(workdir / "pg", servers.free_port())
        self.role_limit = role_limit
        self.pool_size = pool_size
        self.max_connections = max_connections
        self.admin_dsn = ""  # superuser, the fleet database: the benchmark's own look
        self.direct_dsn = ""  # the role, straight to Postgres
        self.pooled_dsn = ""  # the role, through PgBouncer
        self.bouncer: PgBouncer | None = None

    def start(self) -> None:
        if not self.cluster.available:
            raise RuntimeError("no initdb/pg_ctl on this machine: cannot build a cluster")
        if not pgbouncer_installed():
            raise RuntimeError("pgbouncer is not installed (apt-get install -y pgbouncer)")
        root_dsn = self.cluster.start()
        if root_dsn is None:
            raise RuntimeError(f"the cluster did not start; see {self.cluster.log}")
        with psycopg.connect(root_dsn, autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET max_connections = {int(self.max_connections)}")
        self.cluster.stop()  # max_connections takes a restart
        root_dsn = self.cluster.start()
        if root_dsn is None:
            raise RuntimeError(f"the cluster did not restart; see {self.cluster.log}")
        with psycopg.connect(root_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE ROLE {} LOGIN CONNECTION LIMIT {}").format(
                    sql.Identifier(ROLE), sql.Literal(self.role_limit)
                )
            )
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(DATABASE), sql.Identifier(ROLE)
                )
            )
        self.admin_dsn = with_user_and_db(root_dsn, "postgres", DATABASE)
        self.direct_dsn = with_user_and_db(root_dsn, ROLE, DATABASE)
        self.bouncer = PgBouncer(self.direct_dsn, pool_size=self.pool_size)
        self.pooled_dsn = self.bouncer.start()

    def set_role_limit(self, limit: int) -> None:
        """The role's CONNECTION LIMIT (-1: none), for the sessions that start next."""
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("ALTER ROLE {} CONNECTION LIMIT {}").format(
                    sql.Identifier(ROLE), sql.Literal(limit)
                )
            )

    def postmaster_pid(self) -> int:
        return int((self.cluster.data / "postmaster.pid").read_text().split()[0])

    def bouncer_pid(self) -> int | None:
        process = self.bouncer.process if self.bouncer is not None else None
        return process.pid if process is not None else None

    def settings(self) -> dict[str, str]:
        names = ("max_connections", "shared_buffers", "fsync", "synchronous_commit", "autovacuum")
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            version = conn.execute("SHOW server_version").fetchone()
            rows = conn.execute(
                "SELECT name, current_setting(name) FROM pg_settings WHERE name = ANY(%s)",
                [list(names)],
            ).fetchall()
        out = {name: value for name, value in rows}
        out["server_version"] = version[0] if version else "?"
        return out

    def stop(self) -> None:
        if self.bouncer is not None:
            self.bouncer.close()  # its config and log directory too
        self.cluster.remove()
