"""The SQLite store's schema: its numbered migrations, applied in one write.

sqlite3 runs one statement at a time inside a transaction (``executescript`` would
commit first), so each migration is split into its statements here.
"""

from __future__ import annotations

import sqlite3
import time

from ...exceptions import StoreError
from ..sqlfile import load_migrations, load_queries

Q = load_queries("sqlite.sql")
MIGRATIONS = load_migrations("sqlite")


def split_script(script: str) -> list[str]:
    """A migration script as single statements (sqlite3 runs one at a time inside a
    transaction; ``executescript`` would commit first)."""
    statements, pending = [], ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            statement = pending.strip()
            if statement.rstrip(";").strip() and not all(
                part.strip().startswith("--") or not part.strip() for part in statement.splitlines()
            ):
                statements.append(statement)
            pending = ""
    if pending.strip() and not all(
        p.strip().startswith("--") or not p.strip() for p in pending.splitlines()
    ):
        raise StoreError(f"incomplete SQL statement in migration: {pending.strip()[:80]!r}")
    return statements


def apply_migrations(db: sqlite3.Connection) -> list[str]:
    """Apply the migrations ``db`` lacks (inside a write); return their versions."""
    db.execute(Q["create_migrations_table"])
    done = {row["version"] for row in db.execute(Q["applied_migrations"])}
    applied = []
    for migration in MIGRATIONS:
        if migration.version in done:
            continue
        for statement in split_script(migration.sql):
            db.execute(statement)
        db.execute(Q["record_migration"], {"version": migration.version, "now": time.time()})
        applied.append(migration.version)
    return applied


def missing_migrations(db: sqlite3.Connection) -> list[str]:
    """The versions of the migrations not applied to ``db``."""
    done = {row["version"] for row in db.execute(Q["applied_migrations"])}
    return [m.version for m in MIGRATIONS if m.version not in done]
