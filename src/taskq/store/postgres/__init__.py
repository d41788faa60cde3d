"""The Postgres engine: ``PostgresStore`` and its ``Insight``.

| module | what it is |
|---|---|
| ``store.py`` | ``PostgresStore``: one method per ``Store`` call |
| ``connections.py`` | the DSN, the pool, the kept connection, driver errors mapped |
| ``here.py`` | the synchronous ``Client``'s enqueue on its calling threads (``LocalEnqueue``) |
| ``bulk.py`` | COPY of a large batch (plain, or staged for unique keys) |
| ``claims.py`` | the claim connection and its pipelines (plain, checking limits, limited) |
| ``listen.py`` | the one LISTEN connection (new jobs and cancels) several tasks wait on |
| ``upkeep.py`` | leases, workgroup reports, autovacuum and VACUUM (the store inherits them) |
| ``workflows.py`` | workflow inserts, reads, cancel, fan-out (the store inherits them) |
| ``schema.py`` | the numbered migrations, applied in one transaction |
| ``codec.py`` | ids, times and lists as psycopg returns them |
| ``insight.py`` | ``PostgresInsight``: the operator's views |
| ``postgres.sql`` | every statement the engine sends, as named blocks |
"""

from __future__ import annotations

from .store import PostgresStore

__all__ = ["PostgresStore"]
