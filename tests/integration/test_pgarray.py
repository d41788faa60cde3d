"""Array literals built by taskq.store.pgarray read back, through a real Postgres, as the
values they were built from (the complete / give_back parameters depend on it)."""

from __future__ import annotations

import math
from uuid import UUID

import psycopg
import pytest

from taskq.ids import uuid7_many
from taskq.store import pgarray

AWKWARD_TEXTS = [
    "plain",
    'a "quoted" word',
    'back\\slash and \\" both',
    "{braces}, commas, and spaces ",
    "NULL",
    "",
    "line\nbreak\ttab",
    "ünïcödé ✓",
    '{"json": [1, "two", null]}',
    None,
]


@pytest.fixture
def conn(pg_dsn: str):
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        yield c


def read_back(conn: psycopg.Connection, literal: str | None, pg_type: str) -> object:
    row = conn.execute(f"SELECT %s::{pg_type}[]", [literal]).fetchone()
    assert row is not None
    return row[0]


def test_uuids(conn: psycopg.Connection) -> None:
    ids = [*uuid7_many(5), UUID(int=0), UUID(int=2**128 - 1)]
    assert read_back(conn, pgarray.uuids(ids), "uuid") == ids


def test_ints_floats_bools(conn: psycopg.Connection) -> None:
    assert read_back(conn, pgarray.ints([0, 1, -7, 2**31 - 1]), "int") == [0, 1, -7, 2**31 - 1]
    floats = read_back(conn, pgarray.floats([0.0, 1e-05, 12.5, 3600, math.inf]), "float8")
    assert floats == [0.0, 1e-05, 12.5, 3600.0, math.inf]
    assert read_back(conn, pgarray.bools([True, False, False]), "bool") == [True, False, False]


def test_texts_survive_quoting_and_escaping(conn: psycopg.Connection) -> None:
    assert read_back(conn, pgarray.texts(AWKWARD_TEXTS), "text") == AWKWARD_TEXTS


def test_all_null_texts_are_a_null_array_that_unnest_reads_as_nulls(
    conn: psycopg.Connection,
) -> None:
    assert pgarray.texts([None, None]) is None
    rows = conn.execute(
        "SELECT * FROM unnest(%s::int[], %s::text[]) AS u(n, t)",
        [pgarray.ints([1, 2]), pgarray.texts([None, None])],
    ).fetchall()
    assert rows == [(1, None), (2, None)]


def test_empty_arrays(conn: psycopg.Connection) -> None:
    assert read_back(conn, pgarray.uuids([]), "uuid") == []
    assert read_back(conn, pgarray.ints([]), "int") == []


def test_names_survive_quoting_and_none_is_an_empty_array_not_null(
    conn: psycopg.Connection,
) -> None:
    names = [t for t in AWKWARD_TEXTS if t is not None]
    assert read_back(conn, pgarray.names(names), "text") == names
    # a claim leaves out no actor with `actor <> ALL(%(exclude_actors)s::text[])`: an
    # empty array keeps every row, where a NULL one would keep none
    assert pgarray.names([]) == "{}"
    row = conn.execute("SELECT 'burn' <> ALL(%s::text[])", [pgarray.names([])]).fetchone()
    assert row == (True,)
