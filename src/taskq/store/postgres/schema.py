"""The Postgres store's schema: its numbered migrations, applied in one transaction.

``taskq migrate`` takes a transaction-scoped advisory lock (two at once: the second
waits, then finds nothing to do), creates the schema and points the transaction at it
(``SET LOCAL search_path``: the migration files name no schema), then applies what the
``schema_migrations`` table lacks.
"""

from __future__ import annotations

from psycopg.rows import dict_row

from ..sqlfile import load_migrations
from .connections import Connections

MIGRATIONS = load_migrations("postgres")


async def apply_migrations(db: Connections) -> list[str]:
    """Apply the migrations the schema lacks; return their versions."""
    q, applied = db.q, []
    async with db.connection() as conn, conn.transaction():
        await conn.execute(q["migration_lock"], {"key": f"taskq-migrate:{db.schema}"})
        await conn.execute(q["create_schema"])
        await conn.execute(q["use_schema"])
        await conn.execute(q["create_migrations_table"])
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(q["applied_migrations"])
        done = {row["version"] for row in await cur.fetchall()}
        for migration in MIGRATIONS:
            if migration.version in done:
                continue
            await conn.execute(migration.sql)
            await conn.execute(q["record_migration"], {"version": migration.version})
            applied.append(migration.version)
    return applied


async def missing_migrations(db: Connections) -> list[str]:
    """The versions of the migrations the schema lacks."""
    done = {r["version"] for r in await db.fetchall("applied_migrations")}
    return [m.version for m in MIGRATIONS if m.version not in done]
