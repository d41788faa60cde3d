"""Queue views and limits, as the stores share them (no I/O).

``depths`` and ``statuses`` fold the rows of the stores' ``queue_backlog`` statement
(the same columns on both): the operator's views (``Insight``).

Both stores read the same three things for ``taskq queues``: jobs per (queue, state)
with the oldest due job's wait, the ``queues`` rows (pause state) and the ``limits``
rows, as named rows. ``overview`` folds them into one ``QueueInfo`` per queue, sorted by
name: every queue that has jobs, is paused, or has limits. A queue resumed and without
jobs or limits drops out of the list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..insight import QueueDepth, QueueStatus
from ..jobs import ALL_STATES, Limits, QueueInfo, Rate
from .rows import Codec, Row

QUEUE, ACTOR = "queue", "actor"
# Seconds a claimer trusts its "no limit applies": the plain claim statements skip
# limited queues and actors themselves, so a stale "no" only delays a newly limited
# queue's jobs (to the limited claim); it never lets a limit be exceeded.
LIMITS_TTL = 1.0


def count_full(waits: dict[tuple[str, str], int], full: Iterable[str]) -> None:
    """Count one wait for each limit a claim found full (``"kind:name"`` each)."""
    for item in full:
        kind, _, name = item.partition(":")
        waits[(kind, name)] = waits.get((kind, name), 0) + 1


def limits_from_row(r: Row) -> Limits:
    """A ``limits`` row (concurrency, rate, rate_period) as ``Limits``."""
    rate, period = r["rate"], r["rate_period"]
    return Limits(
        concurrency=r["concurrency"],
        rate=Rate(rate, float(period)) if rate is not None and period is not None else None,
    )


def overview(
    codec: Codec, depths: Iterable[Row], controls: Iterable[Row], limits: Iterable[Row]
) -> list[QueueInfo]:
    """``depths``: rows of (queue, state, n, oldest_s: the oldest due queued job's wait);
    ``controls``: ``queues`` rows; ``limits``: ``limits`` rows (only queues' are used)."""
    counts: dict[str, dict[str, int]] = {}
    oldest: dict[str, float] = {}
    for r in depths:
        counts.setdefault(r["queue"], dict.fromkeys(ALL_STATES, 0))[r["state"]] = int(r["n"])
        if r["oldest_s"] is not None:
            oldest[r["queue"]] = max(float(r["oldest_s"]), 0.0)
    paused = {r["name"]: r for r in controls if r["paused"]}
    queue_limits = {r["name"]: limits_from_row(r) for r in limits if r["kind"] == QUEUE}
    names = sorted(set(counts) | {r for r in paused} | set(queue_limits))
    out = []
    for name in names:
        control = paused.get(name)
        out.append(
            QueueInfo(
                name=name,
                depth=counts.get(name, dict.fromkeys(ALL_STATES, 0)),
                oldest_age_s=oldest.get(name),
                paused=control is not None,
                paused_at=codec.maybe_time(control["paused_at"]) if control else None,
                paused_by=control["paused_by"] if control else None,
                limits=queue_limits.get(name, Limits()),
            )
        )
    return out


def depths(rows: Sequence[Mapping[str, Any]]) -> list[QueueDepth]:
    """``queue_backlog`` rows -> one ``QueueDepth`` per queue, by name."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        queue, state = row["queue"], row["state"]
        entry = found.setdefault(queue, {"queue": queue})
        entry[state] = int(row["jobs"])
        if state == "queued":
            entry["oldest_due_age"] = max(0.0, float(row["oldest_due_age"]))
    return [QueueDepth(**found[q]) for q in sorted(found)]


def statuses(
    codec: Codec, backlog: Sequence[Row], controls: Iterable[Row], limits: Iterable[Row]
) -> list[QueueStatus]:
    """``queue_backlog`` rows, ``queues`` rows and ``limits`` rows -> one ``QueueStatus``
    per queue that has live jobs, is paused or has limits, by name."""
    found = {d.queue: d for d in depths(backlog)}
    paused = {r["name"]: r for r in controls if r["paused"]}
    queue_limits = {r["name"]: limits_from_row(r) for r in limits if r["kind"] == QUEUE}
    out = []
    for name in sorted(set(found) | set(paused) | set(queue_limits)):
        control = paused.get(name)
        out.append(
            QueueStatus(
                name=name,
                backlog=found.get(name) or QueueDepth(name),
                paused=control is not None,
                paused_at=codec.maybe_time(control["paused_at"]) if control else None,
                paused_by=control["paused_by"] if control else None,
                limits=queue_limits.get(name, Limits()),
            )
        )
    return out
