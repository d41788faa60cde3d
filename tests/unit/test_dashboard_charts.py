"""The dashboard's charts as geometry (web/charts.py): buckets, stacking, totals, the
backlog line with gaps, titles that say what each chart is."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

pytest.importorskip("starlette")

from taskq.insight import QueueMinute
from taskq.web.charts import DAY, HOUR, backlog, throughput

NOW = datetime(2026, 1, 2, 12, 30, 20, tzinfo=UTC)


def minute(ago: int, **counts: float) -> QueueMinute:
    at = NOW.replace(second=0) - timedelta(minutes=ago)
    age = counts.pop("age", None)
    return QueueMinute(at, "q", "", **{k: int(v) for k, v in counts.items()}, backlog_age=age)


def test_throughput_stacks_outcomes_per_bucket_and_keeps_its_title() -> None:
    rows = [
        minute(0, succeeded=7, failed_runs=3, dead=1),
        minute(0, succeeded=1),  # another queue's row of the same minute adds up
        minute(5, succeeded=2),
        minute(90, succeeded=100),  # before the hour: not on the hour's chart
    ]
    chart = throughput(rows, HOUR, NOW, "Jobs finished per minute, last hour")
    assert chart.title == "Jobs finished per minute, last hour"
    assert chart.totals == {"succeeded": 10, "retried": 2, "dead": 1}
    now_bars = [b for b in chart.bars if b.title.startswith("12:30")]
    assert [b.kind for b in now_bars] == ["succeeded", "retried", "dead"]
    assert now_bars[0].title == "12:30 UTC: 8 succeeded (per minute)"
    stacked = sorted(now_bars, key=lambda b: b.y)
    assert stacked[0].kind == "dead" and stacked[-1].kind == "succeeded"  # dead on top
    assert chart.y_ticks[-1][1] == "20"  # 11 rounded up to a nice 20
    assert not chart.empty
    day = throughput(rows, DAY, NOW, "day")
    assert day.totals["succeeded"] == 110  # the day holds them all, in 15-min buckets
    assert throughput([], HOUR, NOW, "none").empty


def test_backlog_is_a_line_with_gaps_where_nothing_was_sampled() -> None:
    rows = [minute(i, age=10.0 * i) for i in (1, 2, 3, 10, 11)] + [minute(30)]
    chart = backlog(rows, HOUR, NOW, "Oldest due job's wait, last hour")
    assert len(chart.points) == 5 and len(chart.lines) == 2  # two runs, one gap
    assert chart.y_ticks[-1][1] == "3.3m"  # 110 s rounded up to 200 s
    assert backlog([minute(1)], HOUR, NOW, "none").empty
