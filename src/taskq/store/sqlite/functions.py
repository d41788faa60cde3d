"""SQL functions taskq adds to its SQLite connections (``register``).

``taskq_json_contains(document, pattern)``: Postgres's ``jsonb @>`` on JSON text, so the
dashboard's search by arguments and meta means the same on both stores: an object
contains an object whose every key it has with a contained value; an array contains an
array whose every element some element of it contains (and a scalar it holds); a scalar
contains an equal scalar.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any


def contains(document: Any, pattern: Any) -> bool:
    if isinstance(pattern, dict):
        return isinstance(document, dict) and all(
            key in document and contains(document[key], value) for key, value in pattern.items()
        )
    if isinstance(pattern, list):
        if not isinstance(document, list):
            return False
        return all(any(contains(item, wanted) for item in document) for wanted in pattern)
    if isinstance(document, list):  # jsonb: an array contains a scalar it holds
        return any(not isinstance(item, dict | list) and _same(item, pattern) for item in document)
    return _same(document, pattern)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def json_contains(document: str | None, pattern: str | None) -> int:
    if document is None or pattern is None:
        return 0
    try:
        return int(contains(json.loads(document), json.loads(pattern)))
    except (ValueError, RecursionError):
        return 0


def register(conn: sqlite3.Connection) -> None:
    conn.create_function("taskq_json_contains", 2, json_contains, deterministic=True)
