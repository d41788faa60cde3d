"""Postgres array literals (``{a,b,...}``) for the batched hot-path statements.

``complete`` and ``give_back`` send a worker's outcomes as parallel arrays, one element
per job; a claim sends its queues and the actors it leaves out. psycopg turns a Python
list into an array in Python, element by element: for a 64-job batch of outcomes that
took ~0.8 ms of the worker's CPU (a UUID list alone ~0.3 ms, ~5 us an element), a fifth
of what the worker spent on each job. Built here as one ``str.join`` of text the server
parses with the array's own input function (the statement casts: ``%(ids)s::uuid[]``),
the same batch costs ~0.08 ms.

A claim's two name lists went through psycopg's list dumper at every claim (~4% of
the worker's CPU in a drain of 2 ms CPU-bound jobs, one claim per ~6 jobs).

Only what these statements send is covered: UUIDs, integers, floats, booleans, and
texts (quoted and escaped as the array syntax requires; ``None`` is NULL). A text
array whose elements are all ``None`` is sent as NULL itself: in a multi-argument
``unnest`` a NULL array reads as NULL in every row, exactly as an array of NULLs does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from ..jobs import Outcome


def uuids(values: Iterable[UUID]) -> str:
    """``{0189...,...}``: 32 hex digits each (uuid input takes them without hyphens)."""
    return "{" + ",".join([f"{u.int:032x}" for u in values]) + "}"


def ints(values: Iterable[int]) -> str:
    return "{" + ",".join([str(int(v)) for v in values]) + "}"


def floats(values: Iterable[float]) -> str:
    """``repr`` of each: ``1e-05``, ``inf`` and ``nan`` are all valid float8 input."""
    return "{" + ",".join([repr(float(v)) for v in values]) + "}"


def bools(values: Iterable[bool]) -> str:
    return "{" + ",".join(["t" if v else "f" for v in values]) + "}"


def texts(values: Iterable[str | None]) -> str | None:
    """Each text double-quoted, with ``\\`` and ``"`` escaped; ``None`` is NULL. ``None``
    (a NULL array) when every element is ``None``."""
    items = list(values)
    if items.count(None) == len(items):
        return None
    return "{" + ",".join([_quoted(v) for v in items]) + "}"


def names(values: Iterable[str]) -> str:
    """A text array of names (queues, actors), ``{}`` when there are none."""
    return "{" + ",".join([_quoted(v) for v in values]) + "}"


def _quoted(value: str | None) -> str:
    if value is None:
        return "NULL"
    if "\\" in value or '"' in value:
        value = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + value + '"'


def complete_params(worker_id: UUID, channel: str, outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """The parameters of ``complete``: a batch of outcomes as parallel arrays."""
    return {
        "worker_id": worker_id,
        "channel": channel,
        "ids": uuids([o.job_id for o in outcomes]),
        "attempts": ints([o.attempt for o in outcomes]),
        "kinds": texts([o.kind for o in outcomes]),
        "results": texts([o.result_json for o in outcomes]),
        "errors": texts([o.error for o in outcomes]),
        "delays": floats([o.retry_delay for o in outcomes]),
        "reasons": texts([o.dead_reason for o in outcomes]),
        "blames": bools([o.blamed for o in outcomes]),
        "metas": texts([o.meta_json for o in outcomes]),
    }
