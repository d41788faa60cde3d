"""The dashboard's charts over time, as the stores share them (no I/O): which minutes to
count, and their rows as ``QueueMinute``.

Finished jobs are counted per minute, queue and actor once the minute has closed (``LAG``
after, for the acks in flight), from the indexed finish times and failed runs, into
``queue_minutes``, which keeps ``KEEP``; the minute still open is counted on each read
and not stored. ``Insight.record_activity`` counts what closed since the last count
(at most ``SHOWN`` back) and samples the backlog's age; the backlog-metrics leader calls
it at every report and an open dashboard at every page, so the minutes are counted
within about a minute of closing, whichever runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from ..insight import QueueMinute

#: how far back a chart goes, and how far back a first count reaches
SHOWN = timedelta(days=1)
#: how long counted minutes are kept
KEEP = timedelta(days=2)
#: a minute is counted this long after it closed (acknowledgements still in flight)
LAG = timedelta(seconds=10)


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


def to_count(upto: datetime | None, now: datetime) -> tuple[datetime, datetime] | None:
    """The closed minutes ``[start, end)`` not counted yet, or None."""
    end = minute_of(now - LAG)
    start = end - SHOWN if upto is None else max(upto, end - SHOWN)
    return (start, end) if start < end else None


def minutes(rows: Iterable[Mapping[str, Any]], time: Any) -> list[QueueMinute]:
    """``activity_read`` rows as ``QueueMinute``s (``time`` decodes the engine's times)."""
    return [
        QueueMinute(
            time(r["minute"]),
            r["queue"],
            r["actor"],
            int(r["succeeded"] or 0),
            int(r["failed_runs"] or 0),
            int(r["dead"] or 0),
            None if r["backlog_age"] is None else float(r["backlog_age"]),
        )
        for r in rows
    ]


def open_minute(
    rows: Iterable[Mapping[str, Any]], minute: datetime, *, queue: str | None, by_actor: bool
) -> list[QueueMinute]:
    """``activity_live`` rows: the minute still open, per queue (and actor)."""
    out: dict[tuple[str, str], QueueMinute] = {}
    for r in rows:
        if queue is not None and r["queue"] != queue:
            continue
        key = (r["queue"], r["actor"] if by_actor else "")
        seen = out.get(key) or QueueMinute(minute, *key)
        out[key] = QueueMinute(
            minute,
            *key,
            seen.succeeded + int(r["succeeded"] or 0),
            seen.failed_runs + int(r["failed_runs"] or 0),
            seen.dead + int(r["dead"] or 0),
        )
    return list(out.values())
