"""Schema upgrades keep the previous release's workers running (docs/upgrading.md).

During a rolling deploy ``taskq migrate`` runs first, then workers of the new release
replace those of the previous one, which keep claiming, acking and enqueueing against
the migrated schema until they are gone. So a migration may only **expand** the schema:
everything the schema had before it is taken to be used by the previous release's
workers. Each migration is applied in turn to a real database of each engine, and the
catalog before and after it compared; a migration fails this test when it

- drops or renames a table, a column, a view, a trigger or a function a worker's SQL
  can call (a trigger function is used by its trigger only: a migration may replace it
  in the same transaction as the trigger, whose name is what is checked),
- changes a column's type or a function's result type,
- makes an existing column NOT NULL, or takes the default of a NOT NULL column away,
- adds a NOT NULL column without a default to an existing table (the previous
  release's INSERTs, which do not name it, would fail),

unless its first lines mark it as the **contract** step of a change announced in
docs/upgrading.md ("Announced changes"): ``-- taskq-contract: <change>``, with the
change's name listed there.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from taskq.store.sqlfile import Migration, load_migrations

UPGRADING = Path(__file__).resolve().parents[2] / "docs" / "upgrading.md"
CONTRACT = re.compile(r"^--\s*taskq-contract:\s*(\S+)", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Column:
    type: str
    not_null: bool
    has_default: bool


#: "table t" / "column t.c" / "view v" / "trigger t.x" / "function f(args)" -> its shape
Catalog = dict[str, object]


def pg_catalog(conn: psycopg.Connection, schema: str) -> Catalog:
    out: Catalog = {}
    for kind, name in conn.execute(
        "SELECT c.relkind, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p', 'v', 'm')",
        (schema,),
    ):
        out[("view " if kind in ("v", "m") else "table ") + name] = kind
    for table, column, type_, not_null, has_default in conn.execute(
        "SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,"
        "       a.atthasdef"
        " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'p') AND a.attnum > 0"
        "   AND NOT a.attisdropped",
        (schema,),
    ):
        out[f"column {table}.{column}"] = Column(type_, not_null, has_default)
    for table, trigger in conn.execute(
        "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND NOT t.tgisinternal",
        (schema,),
    ):
        out[f"trigger {table}.{trigger}"] = True
    for name, args, result in conn.execute(
        "SELECT p.proname, pg_get_function_identity_arguments(p.oid),"
        "       pg_get_function_result(p.oid)"
        " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = %s",
        (schema,),
    ):
        if result != "trigger":  # called by the triggers only, which are checked by name
            out[f"function {name}({args})"] = result
    return out


def sqlite_catalog(conn: sqlite3.Connection) -> Catalog:
    out: Catalog = {}
    objects = conn.execute(
        "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"
    ).fetchall()
    for kind, name, table in objects:
        if kind in ("table", "view"):
            out[f"{kind} {name}"] = True
        elif kind == "trigger":
            out[f"trigger {table}.{name}"] = True
        if kind == "table":
            for _, column, type_, not_null, default, _pk in conn.execute(
                f'PRAGMA table_info("{name}")'
            ):
                out[f"column {name}.{column}"] = Column(
                    type_.lower(), bool(not_null), default is not None
                )
    return out


def breaking_changes(before: Catalog, after: Catalog) -> list[str]:
    """What a migration from ``before`` to ``after`` does that the previous release's
    workers, written against ``before``, may not survive."""
    found = []
    for key, old in before.items():
        new = after.get(key)
        if new is None:
            found.append(f"drops or renames {key}")
        elif isinstance(old, Column) and isinstance(new, Column):
            if new.type != old.type:
                found.append(f"retypes {key} from {old.type} to {new.type}")
            if new.not_null and not old.not_null and not new.has_default:
                found.append(f"makes {key} NOT NULL without a default")
            if new.not_null and old.has_default and not new.has_default:
                found.append(f"takes the default of NOT NULL {key} away")
        elif key.startswith("function ") and new != old:
            found.append(f"retypes {key}: it returned {old}, now {new}")
    for key, new in after.items():
        table = key.removeprefix("column ").split(".")[0]
        if (
            key.startswith("column ")
            and key not in before
            and f"table {table}" in before
            and isinstance(new, Column)
            and new.not_null
            and not new.has_default
        ):
            found.append(
                f"adds {key} NOT NULL without a default to an existing table (the previous "
                "release's INSERTs do not name it)"
            )
    return found


def announced_changes() -> set[str]:
    """The change names in docs/upgrading.md's "Announced changes" table."""
    text = UPGRADING.read_text(encoding="utf-8")
    section = text.split("## Announced changes", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\|\s*`([a-z0-9][a-z0-9-]*)`\s*\|", section, re.MULTILINE))


def contract_of(migration: Migration) -> str | None:
    head = "\n".join(migration.sql.splitlines()[:5])
    match = CONTRACT.search(head)
    return match.group(1) if match else None


def steps(
    target, migrations: tuple[Migration, ...]
) -> Iterator[tuple[Migration, Catalog, Catalog]]:
    """Apply ``migrations`` one at a time to a fresh database of ``target``'s engine;
    the catalog before and after each."""
    if target.kind == "postgres":
        with psycopg.connect(target.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{target.schema}"')
            conn.execute("SELECT set_config('search_path', %s, false)", (target.schema,))
            before = pg_catalog(conn, target.schema)
            for migration in migrations:
                with conn.transaction():
                    conn.execute(migration.sql)  # type: ignore[call-overload]
                after = pg_catalog(conn, target.schema)
                yield migration, before, after
                before = after
        return
    conn = sqlite3.connect(target.dsn.removeprefix("sqlite:///"))
    try:
        before = sqlite_catalog(conn)
        for migration in migrations:
            conn.executescript(migration.sql)
            after = sqlite_catalog(conn)
            yield migration, before, after
            before = after
    finally:
        conn.close()


def test_no_migration_breaks_the_previous_releases_workers(target):
    announced = announced_changes()
    broken = []
    for migration, before, after in steps(target, load_migrations(target.kind)):
        contract = contract_of(migration)
        if contract is not None:
            assert contract in announced, (
                f"{target.kind} {migration.version} is marked as the contract step of "
                f"{contract!r}, which docs/upgrading.md does not announce"
            )
            continue
        broken += [f"{migration.version} {change}" for change in breaking_changes(before, after)]
    assert not broken, (
        f"{target.kind} migrations that the previous release's workers may not survive "
        "(expand only; a contract step needs `-- taskq-contract: <change>` and the change "
        f"announced in docs/upgrading.md): {broken}"
    )


BREAKING = {
    "drop": (
        "ALTER TABLE jobs DROP COLUMN cancelled_by",
        "drops or renames column jobs.cancelled_by",
    ),
    "rename": (
        "ALTER TABLE queues RENAME COLUMN paused_by TO paused_by_whom",
        "drops or renames column queues.paused_by",
    ),
    "not-null": (
        "ALTER TABLE jobs ADD COLUMN region text NOT NULL",
        "adds column jobs.region NOT NULL without a default",
    ),
}


@pytest.mark.parametrize("case", sorted(BREAKING))
def test_the_check_catches_a_breaking_migration_and_lets_a_contract_step_through(
    target, case: str
) -> None:
    """The test above can fail: a migration appended after the real ones that drops,
    renames or adds a NOT NULL column is caught; marked as a contract step it is not."""
    statement, expected = BREAKING[case]
    if case == "not-null" and target.kind == "sqlite":
        statement += " DEFAULT 'x'"  # SQLite refuses the bare form itself
        expected = ""
    real = load_migrations(target.kind)
    extra = Migration("9999_breaking", statement + ";\n")
    *_, (_, before, after) = steps(target, (*real, extra))
    changes = breaking_changes(before, after)
    if expected:
        assert any(change.startswith(expected) for change in changes), changes
    else:
        assert changes == []
    marked = Migration("9999_breaking", "-- taskq-contract: some-change\n" + statement)
    assert contract_of(marked) == "some-change" and contract_of(extra) is None
