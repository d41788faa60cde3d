"""The dashboard's charts over time, laid out for server-side SVG (no script draws them,
no CDN: the page works offline, and the live region's refresh redraws them).

``throughput`` stacks, per bucket of time, the jobs that succeeded, the runs that failed
and were retried, and the jobs that went dead (``QueueMinute`` rows from
``Insight.activity``); ``backlog`` draws the age of the oldest due queued job, the
largest sampled per bucket, as a line with gaps where nothing was sampled. Both return
plain geometry (rectangles, polyline points, axis ticks); ``templates/_chart.html``
turns it into SVG elements, so Jinja escapes every label, and the stylesheet colours
them by class.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from ..insight import QueueMinute
from .render import age

WIDTH, HEIGHT = 600, 160
LEFT, RIGHT, TOP, BOTTOM = 52, 8, 10, 22
KINDS = ("succeeded", "retried", "dead")


@dataclass(frozen=True, slots=True)
class Window:
    """A chart's span: ``buckets`` buckets of ``bucket`` seconds ending now."""

    name: str  # "hour" | "day"
    bucket: int
    buckets: int

    def start(self, now: datetime) -> datetime:
        end = _floor(now, self.bucket) + timedelta(seconds=self.bucket)
        return end - timedelta(seconds=self.bucket * self.buckets)

    @property
    def per(self) -> str:
        return "minute" if self.bucket == 60 else f"{self.bucket // 60} min"


HOUR = Window("hour", 60, 60)
DAY = Window("day", 900, 96)


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str
    title: str


@dataclass(frozen=True, slots=True)
class Chart:
    title: str
    window: Window
    width: int = WIDTH
    height: int = HEIGHT
    bars: list[Bar] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # polyline point lists
    points: list[tuple[float, float, str]] = field(default_factory=list)  # dots with titles
    y_ticks: list[tuple[float, str]] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] = field(default_factory=list)
    totals: dict[str, int] = field(default_factory=dict)
    empty: bool = True

    @property
    def plot(self) -> tuple[int, int, int, int]:
        """The plotting area: left, top, right, bottom."""
        return LEFT, TOP, self.width - RIGHT, self.height - BOTTOM


def _floor(moment: datetime, seconds: int) -> datetime:
    stamp = moment.timestamp()
    return datetime.fromtimestamp(stamp - stamp % seconds, UTC)


def _nice(peak: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten at or above ``peak`` (1 at least)."""
    if peak <= 1:
        return 1.0
    power = 10 ** math.floor(math.log10(peak))
    for step in (1, 2, 5, 10):
        if peak <= step * power:
            return float(step * power)
    return float(10 * power)  # pragma: no cover - 10 always fits


def _x_ticks(window: Window, start: datetime, slot: float) -> list[tuple[float, str]]:
    """A time label every 10 minutes (hour) or 4 hours (day), none at the right edge."""
    every = 10 if window is HOUR else 16
    ticks = []
    for i in range(0, window.buckets - every // 2, every):
        moment = start + timedelta(seconds=window.bucket * i)
        ticks.append((LEFT + i * slot, moment.strftime("%H:%M")))
    return ticks


def _index(window: Window, start: datetime, minute: datetime) -> int | None:
    i = int((minute - start).total_seconds() // window.bucket)
    return i if 0 <= i < window.buckets else None


def throughput(rows: Iterable[QueueMinute], window: Window, now: datetime, title: str) -> Chart:
    """Jobs finished per bucket, stacked by outcome: succeeded, retried, dead."""
    start = window.start(now)
    sums = [dict.fromkeys(KINDS, 0) for _ in range(window.buckets)]
    for row in rows:
        i = _index(window, start, row.minute)
        if i is not None:
            sums[i]["succeeded"] += row.succeeded
            sums[i]["retried"] += row.retried
            sums[i]["dead"] += row.dead
    peak = max((sum(s.values()) for s in sums), default=0)
    top = _nice(peak)
    left, top_y, right, bottom = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM
    slot = (right - left) / window.buckets
    scale = (bottom - top_y) / top
    bars = []
    for i, counts in enumerate(sums):
        y = float(bottom)
        moment = start + timedelta(seconds=window.bucket * i)
        for kind in KINDS:
            n = counts[kind]
            if not n:
                continue
            h = n * scale
            y -= h
            hover = f"{moment:%H:%M} UTC: {n} {kind} (per {window.per})"
            bars.append(Bar(left + i * slot + 0.5, y, max(slot - 1.0, 1.0), h, kind, hover))
    totals = {kind: sum(s[kind] for s in sums) for kind in KINDS}
    return Chart(
        title=title,
        window=window,
        bars=bars,
        y_ticks=[(bottom - v * scale, f"{v:g}") for v in (0, top / 2, top)],
        x_ticks=_x_ticks(window, start, slot),
        totals=totals,
        empty=peak == 0,
    )


def backlog(rows: Iterable[QueueMinute], window: Window, now: datetime, title: str) -> Chart:
    """The oldest due queued job's age, the largest sampled per bucket (a line; a gap
    where nothing was sampled)."""
    start = window.start(now)
    ages: list[float | None] = [None] * window.buckets
    for row in rows:
        i = _index(window, start, row.minute)
        if i is not None and row.backlog_age is not None:
            ages[i] = max(ages[i] or 0.0, row.backlog_age)
    peak = max((a for a in ages if a is not None), default=0.0)
    top = _nice(peak)
    left, top_y, right, bottom = LEFT, TOP, WIDTH - RIGHT, HEIGHT - BOTTOM
    slot = (right - left) / window.buckets
    scale = (bottom - top_y) / top
    lines: list[str] = []
    points: list[tuple[float, float, str]] = []
    run: list[str] = []
    for i, value in enumerate(ages):
        if value is None:
            if len(run) > 1:
                lines.append(" ".join(run))
            run = []
            continue
        x, y = left + (i + 0.5) * slot, bottom - value * scale
        run.append(f"{x:.1f},{y:.1f}")
        moment = start + timedelta(seconds=window.bucket * i)
        points.append((x, y, f"{moment:%H:%M} UTC: oldest due job waited {age(value)}"))
    if len(run) > 1:
        lines.append(" ".join(run))
    return Chart(
        title=title,
        window=window,
        lines=lines,
        points=points,
        y_ticks=[(bottom - v * scale, age(v)) for v in (0, top / 2, top)],
        x_ticks=_x_ticks(window, start, slot),
        empty=not points,
    )
