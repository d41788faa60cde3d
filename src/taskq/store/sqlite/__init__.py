"""The SQLite engine: ``SqliteStore`` and its ``Insight``.

| module | what it is |
|---|---|
| ``store.py`` | ``SqliteStore``: one method per ``Store`` call, each run on the store thread |
| ``thread.py`` | ``StoreThread``: the store's one thread (calls in, answers on the loop) |
| ``connections.py`` | the file opened in WAL, BEGIN IMMEDIATE, busy retries, errors, |
| | the calling threads' own connections (``LocalEnqueue``) |
| ``claims.py`` | claims and limits, inside the claim's transaction |
| ``runs.py`` | how runs end: outcomes, give-backs, the crash rules, the lease-expiry sweep |
| ``schema.py`` | the numbered migrations, applied in one write |
| ``codec.py`` | ids, times and lists as SQLite stores them |
| ``upkeep.py`` | leases and workgroup reports (the store inherits them) |
| ``workflows.py`` | workflow inserts, reads, cancel, fan-out (the store inherits them) |
| ``insight.py`` | ``SqliteInsight``: the operator's views |
| ``sqlite.sql`` | every statement the engine sends, as named blocks |
"""

from __future__ import annotations

from .store import SqliteStore

__all__ = ["SqliteStore"]
