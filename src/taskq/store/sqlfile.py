"""SQL kept in files: named query blocks and numbered migrations.

A query file holds blocks like this (procrastinate's layout)::

    -- name: claim
    -- description: Claim up to n due queued jobs for one worker.
    WITH picked AS (...)
    UPDATE jobs SET ...;

Each block starts with ``-- name: <identifier>``, is followed by exactly one
``-- description: <one line>``, and runs until the next ``-- name:`` line. The
trailing ``;`` is dropped. Each file is read once per process, when first asked for
(``load_queries`` keeps what it parsed: the engine's modules and ``enqueue.py`` share
one dict, which nobody changes). An engine's file lives in its package:
``store/postgres/postgres.sql``, ``store/sqlite/sqlite.sql``.

A part several statements share (a SET list, a rule) is written once as a
``-- fragment: <identifier>`` block (same layout) and used as ``{{identifier}}``
inside later blocks; fragments are not statements of their own.

Comments and indentation stay in the files, not in the statements: ``--`` comment
lines, trailing ``-- ...`` comments and each line's leading spaces are dropped when a
block is read (no statement has a string literal that spans lines). A statement is then
short enough
for psycopg's cache of parsed queries (statements over 4 KiB are parsed again at every
execution) and travels to the server without its commentary.

Migrations are ``migrations/<engine>/NNNN_what.sql``; their version is the file stem
and they apply in name order.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..exceptions import SqlFileError

_HERE = Path(__file__).parent
_NAME = re.compile(r"^--\s*(name|fragment):\s*([a-z_][a-z0-9_]*)\s*$")
_USE = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")
_DESCRIPTION = re.compile(r"^--\s*description:\s*(\S.*)$")
_MIGRATION = re.compile(r"^\d{4}_[a-z0-9_]+\.sql$")


def _without_comment(line: str) -> str:
    """``line`` without its ``--`` comment (none is inside a string literal: a line
    whose comment follows a quote keeps it, quotes and all)."""
    code, marker, _ = line.partition("--")
    if not marker or "'" in code:
        return line.strip()
    return code.strip()


def parse_queries(text: str, *, source: str = "<sql>") -> dict[str, str]:
    """Named blocks of ``text`` as ``{name: statement}``, fragments filled in."""
    queries: dict[str, str] = {}
    fragments: dict[str, str] = {}
    name: str | None = None
    is_fragment = False
    described = False
    body: list[str] = []

    def fill(match: re.Match[str], lineno: int) -> str:
        used = match.group(1)
        if used not in fragments:
            raise SqlFileError(f"{source}:{lineno}: {name!r} uses unknown fragment {used!r}")
        return fragments[used]

    def finish(lineno: int) -> None:
        if name is None:
            return
        if not described:
            raise SqlFileError(f"{source}:{lineno}: query {name!r} has no '-- description:' line")
        statement = "\n".join(body).strip().rstrip(";").strip()
        if not statement:
            raise SqlFileError(f"{source}:{lineno}: query {name!r} is empty")
        statement = _USE.sub(lambda m: fill(m, lineno), statement)
        (fragments if is_fragment else queries)[name] = statement

    for lineno, line in enumerate(text.splitlines(), start=1):
        match = _NAME.match(line)
        if match:
            finish(lineno)
            is_fragment, name = match.group(1) == "fragment", match.group(2)
            described, body = False, []
            if name in queries or name in fragments:
                raise SqlFileError(f"{source}:{lineno}: query {name!r} defined twice")
            continue
        if name is None:
            if line.strip() and not line.lstrip().startswith("--"):
                raise SqlFileError(f"{source}:{lineno}: SQL outside a named block")
            continue
        if not described and not body:
            if not _DESCRIPTION.match(line):
                raise SqlFileError(
                    f"{source}:{lineno}: '-- name: {name}' must be followed by '-- description:'"
                )
            described = True
            continue
        code = _without_comment(line)
        if code.strip() or not line.strip():
            body.append(code)
    finish(len(text.splitlines()) + 1)
    return queries


@functools.cache
def load_queries(filename: str) -> dict[str, str]:
    """The named blocks of an engine's SQL file (``postgres.sql``: the file
    ``store/postgres/postgres.sql``), parsed at the first call only."""
    path = _HERE / filename.removesuffix(".sql") / filename
    return parse_queries(path.read_text(encoding="utf-8"), source=str(path))


@dataclass(frozen=True, slots=True)
class Migration:
    version: str  # the file stem, e.g. "0001_initial"
    sql: str


def load_migrations(engine: str) -> tuple[Migration, ...]:
    """The numbered migrations of ``store/migrations/<engine>/``, in order."""
    folder = _HERE / "migrations" / engine
    migrations = []
    for path in sorted(folder.glob("*.sql")):
        if not _MIGRATION.match(path.name):
            raise SqlFileError(f"{path}: migration names look like 0001_what.sql")
        migrations.append(Migration(path.stem, path.read_text(encoding="utf-8")))
    if not migrations:
        raise SqlFileError(f"{folder}: no migrations")
    return tuple(migrations)
