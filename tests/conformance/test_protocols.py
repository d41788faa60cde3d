"""Every engine implements every call of ``Store`` and ``Insight``, with the protocol's
parameters (names, kinds, defaults), and nothing public beyond them goes unlisted."""

from __future__ import annotations

import inspect

import pytest

from taskq.store.base import Store
from taskq.store.insight import Insight
from taskq.store.postgres import PostgresStore
from taskq.store.postgres.insight import PostgresInsight
from taskq.store.sqlite import SqliteStore
from taskq.store.sqlite.insight import SqliteInsight

#: public methods an engine may have beyond its protocol, and why
ENGINE_EXTRAS = {
    "drop_schema",  # Postgres: taskq.testing's throwaway schemas
    "identity",  # Postgres: the server a caller's connection must match (connection=)
    "enqueue_columns_here",  # SQLite: LocalEnqueue, the sync Client's calling thread
    "run",  # SQLite: the store thread, for the engine's own parts
    "write",  # SQLite: one BEGIN IMMEDIATE, for the engine's own parts
}


def calls(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(cls).items()
        if callable(member) and not name.startswith("_")
    } | {
        name: inspect.signature(member)
        for base in cls.__mro__[1:-1]
        for name, member in vars(base).items()
        if callable(member) and not name.startswith("_") and base not in (Store, Insight)
    }


def protocol_calls(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if callable(member) and not name.startswith("_")
    }


def parameters(signature: inspect.Signature) -> list[tuple[str, object, object]]:
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


@pytest.mark.parametrize(
    ("protocol", "engine"),
    [
        (Store, PostgresStore),
        (Store, SqliteStore),
        (Insight, PostgresInsight),
        (Insight, SqliteInsight),
    ],
    ids=["store-postgres", "store-sqlite", "insight-postgres", "insight-sqlite"],
)
def test_an_engine_has_every_call_of_its_protocol_with_its_parameters(protocol, engine):
    wanted, found = protocol_calls(protocol), calls(engine)
    assert sorted(set(wanted) - set(found)) == []
    for name, signature in wanted.items():
        assert parameters(found[name]) == parameters(signature), name
    assert sorted(set(found) - set(wanted) - ENGINE_EXTRAS) == []
