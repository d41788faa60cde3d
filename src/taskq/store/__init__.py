"""Persistence: the worker's ``Store`` and the operator's ``Insight`` protocols, a
Postgres and a SQLite engine behind them (``store.postgres``, ``store.sqlite``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exceptions import InvalidDSN
from ..settings import StoreSettings, redact, resolve, sqlite_path
from .base import Store
from .insight import Insight

#: a Postgres store's pool, unless told (``taskq worker --max-connections`` tells it)
POOL_SIZE = 10

if TYPE_CHECKING:
    from .postgres.notices import Notices


def create_store(
    dsn: str | None = None,
    schema: str | None = None,
    *,
    direct_dsn: str | None = None,
    pool_size: int | None = None,
    application_name: str | None = None,
) -> Store:
    """Build (not open) the store a DSN names. Postgres only: ``direct_dsn`` a direct
    connection past a transaction pooler, for LISTEN (default: ``TASKQ_PG_DSN_DIRECT``),
    used only when the DSN goes through one; ``pool_size`` the most pooled connections
    (default 10; the claim and LISTEN connections are apart); ``application_name`` as
    pg_stat_activity shows it (unless the DSN sets one). Raises InvalidDSN / ConfigError."""
    settings: StoreSettings = resolve(dsn, schema)
    if settings.kind == "postgres":
        from .postgres import PostgresStore

        return PostgresStore(
            settings.dsn,
            schema=settings.schema,
            direct_dsn=direct_dsn or settings.direct_dsn,
            max_size=pool_size or POOL_SIZE,
            application_name=application_name,
        )
    from .sqlite import SqliteStore

    return SqliteStore(sqlite_path(settings.dsn))


def host_notices(dsn: str, schema: str | None = None) -> Notices:
    """The new-job and cancel notifications of a Postgres schema on one LISTEN connection
    of their own (a workgroup's wake-up relay). ``dsn`` must reach Postgres itself, not a
    transaction pooler. Raises InvalidDSN / ConfigError (a SQLite DSN: nothing to hear)."""
    settings = resolve(dsn, schema)
    if settings.kind != "postgres":
        raise InvalidDSN(f"{redact(dsn)!r} is not a Postgres DSN: there is nothing to LISTEN to")
    from .postgres.notices import Notices

    return Notices(settings.dsn, settings.schema)


__all__ = ["Insight", "Store", "create_store", "host_notices"]
