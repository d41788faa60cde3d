"""Named SQL blocks: comments stay in the files, and the hot-path statements stay short
enough for psycopg's cache of parsed queries."""

from __future__ import annotations

import pytest
from psycopg import _queries

from taskq.store.postgres.connections import queries
from taskq.store.sqlfile import load_queries, parse_queries

PG = queries("taskq")
SQLITE = load_queries("sqlite.sql")
#: the longest schema name whose hot-path statements still fit psycopg's parse cache (each
#: names its schema several times: ``"schema".jobs``); the default, ``taskq``, is far off
LONGEST_CACHED_SCHEMA = 40

HOT_PATH = ("claim", "claim_limited", "limits_exist", "complete", "give_back", "heartbeat")


def test_comment_lines_and_trailing_comments_are_dropped() -> None:
    queries = parse_queries(
        "-- name: pick\n"
        "-- description: one statement\n"
        "-- why it is written this way\n"
        "SELECT a,  -- the first column\n"
        "       'x -- kept: inside a string' AS b\n"
        "FROM t;\n"
    )
    assert queries["pick"] == "SELECT a,\n'x -- kept: inside a string' AS b\nFROM t"


def test_fragments_are_filled_in_without_their_comments() -> None:
    queries = parse_queries(
        "-- fragment: cols\n"
        "-- description: shared columns\n"
        "-- (used twice)\n"
        "a, b\n"
        "-- name: pick\n"
        "-- description: uses the fragment\n"
        "SELECT {{cols}} FROM t;\n"
    )
    assert queries["pick"] == "SELECT a, b FROM t"


@pytest.mark.parametrize("schema", ["taskq", "s" * LONGEST_CACHED_SCHEMA])
@pytest.mark.parametrize("name", HOT_PATH)
def test_hot_path_statements_fit_psycopgs_parse_cache(name: str, schema: str) -> None:
    """psycopg parses a statement longer than this again at every execution (a regex over
    the whole text); the worker sends these thousands of times a second."""
    statement = queries(schema)[name]
    assert len(statement.encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH
    assert "--" not in statement


def test_no_statement_keeps_a_comment() -> None:
    for statements in (PG, SQLITE):
        for name, statement in statements.items():
            assert not any(line.lstrip().startswith("--") for line in statement.splitlines()), name
