"""Persistence: the worker's ``Store`` and the operator's ``Insight`` protocols, a
Postgres and a SQLite engine behind them (``store.postgres``, ``store.sqlite``)."""

from __future__ import annotations

from ..settings import StoreSettings, resolve, sqlite_path
from .base import Store
from .insight import Insight


def create_store(dsn: str | None = None, schema: str | None = None) -> Store:
    """Build (not open) the store a DSN names. Raises InvalidDSN / ConfigError."""
    settings: StoreSettings = resolve(dsn, schema)
    if settings.kind == "postgres":
        from .postgres import PostgresStore

        return PostgresStore(settings.dsn, schema=settings.schema)
    from .sqlite import SqliteStore

    return SqliteStore(sqlite_path(settings.dsn))


__all__ = ["Insight", "Store", "create_store"]
