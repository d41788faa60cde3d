"""The machinery of the event vocabulary: ``Event``, ``Count``, the registry of every
declared event (``ALL``), the contract's frozen names, and the docs' listing."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

DEBUG, INFO, WARNING, ERROR, CRITICAL = (
    logging.DEBUG,
    logging.INFO,
    logging.WARNING,
    logging.ERROR,
    logging.CRITICAL,
)


class Count:
    """A metric an event counts: the attribute of ``taskq.metrics``, the fields whose
    values are its labels (in order), and a field that must be set for it to count."""

    __slots__ = ("labels", "metric", "when")

    def __init__(self, metric: str, labels: tuple[str, ...] = (), when: str | None = None) -> None:
        self.metric = metric
        self.labels = labels
        self.when = when

    def add(self, fields: Mapping[str, Any]) -> None:
        if self.when is not None and not fields.get(self.when):
            return
        from .. import metrics

        family = getattr(metrics, self.metric)
        (family.labels(*(fields[k] for k in self.labels)) if self.labels else family).inc()


class Event:
    """One event: what ``log.event`` writes (plain slots, not a dataclass: this module is
    imported by every taskq process, and its import time counts at start-up)."""

    __slots__ = ("area", "counts", "doc", "fields", "level", "name")

    def __init__(
        self,
        name: str,
        level: int,
        fields: tuple[str, ...],
        doc: str,
        area: str,
        counts: tuple[Count, ...] = (),
    ) -> None:
        self.name = name
        self.level = level
        self.fields = fields
        self.doc = doc
        self.area = area
        self.counts = counts

    def __repr__(self) -> str:
        return f"Event({self.name!r})"


ALL: dict[str, Event] = {}

#: names the public contract spells its own way; they never change
FROZEN = frozenset(
    {
        "workgroup.restart_scheduled",
        "workgroup-burst-limit-exceeded",
        "workgroup-reload-signal",
        "workgroup.stream_pump_failed",
        "credentials-reload-failed",
        "process_pool_broken",
        "worker died",
        "actor-config-updated",
        "listen-unavailable",
        "dashboard.listening",  # issue 21 names these two
        "dashboard.auth_failed",
    }
)


def declare(area: str) -> Callable[..., Event]:
    """The function an area's module declares its events with: ``_e(name, level,
    "field field ...", doc, *counts)``."""

    def _e(name: str, level: int, fields: str, doc: str, *counts: Count) -> Event:
        if name in ALL:
            raise ValueError(f"event {name!r} declared twice")
        event = Event(name, level, tuple(fields.split()), doc, area, counts)
        ALL[name] = event
        return event

    return _e


def markdown() -> str:
    """The events as the tables of docs/events.md (one per area)."""
    out: list[str] = []
    for area in dict.fromkeys(e.area for e in ALL.values()):
        out += [f"### {area}", "", "| event | level | fields | meaning | counts |"]
        out.append("|---|---|---|---|---|")
        for e in (e for e in ALL.values() if e.area == area):
            fields = " ".join(f"`{f}`" for f in e.fields) or "-"
            counts = ", ".join(_count_doc(c) for c in e.counts) or "-"
            level = logging.getLevelName(e.level).lower()
            out.append(f"| `{e.name}` | {level} | {fields} | {e.doc} | {counts} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _count_doc(count: Count) -> str:
    from .. import metrics

    family = getattr(metrics, count.metric)
    suffix = "_total" if family.kind == "counter" else ""
    return f"`{family.name}{suffix}`"
