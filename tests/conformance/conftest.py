"""The store conformance suite: the ``Store`` and ``Insight`` contracts, call by call,
against every engine, so the engines cannot drift.

Every test here takes the ``store`` fixture (or ``target``), parametrised by this
module's ``target`` over ``ENGINES``: SQLite (a fresh file per test), Postgres (a fresh
schema per test) and the same Postgres through a real PgBouncer in transaction mode
(``tests/support/pgbouncer.py``; LISTEN on ``TASKQ_PG_DSN_DIRECT``). A new engine, or a new way
to reach one, is one more entry here.
"""

from __future__ import annotations

from tests.conftest import WITH_POOLER, target_fixture

ENGINES = WITH_POOLER

target = target_fixture(*ENGINES)
