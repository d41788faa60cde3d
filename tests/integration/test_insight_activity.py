"""The operator's new views on both stores (issue 23): finished jobs per minute and
queue for the charts (counted once a minute closed, the open minute live, the backlog's
age sampled), the job search by id prefix, arguments and meta (JSON containment, the
same on SQLite as Postgres's ``@>``), and the bounded count a bulk action confirms.
Jobs run by the worker's real executor (``taskq.testing.drain``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from taskq.exceptions import ConfigError
from taskq.insight import JobFilter, QueueDepth
from taskq.testing import drain
from tests.support import dashboard_actors as actors


def totals(rows, queue: str) -> tuple[int, int, int]:
    mine = [r for r in rows if r.queue == queue]
    return (
        sum(r.succeeded for r in mine),
        sum(r.failed_runs for r in mine),
        sum(r.dead for r in mine),
    )


async def test_minutes_are_counted_once_closed_and_the_open_one_live(store, client) -> None:
    for i in range(5):
        client.enqueue(actors.add, i, i)
    client.enqueue(actors.load_report, "/a.csv")  # 2 failed runs, then dead
    drain(client, registry=actors.registry)
    insight = store.insight
    now = datetime.now(UTC)
    since = now - timedelta(hours=1)

    await insight.record_activity(now=now)  # nothing closed yet since the jobs ran
    live = await insight.activity(since, now=now, by_actor=True)
    assert totals(live, "default") == (5, 0, 0)
    assert totals(live, "reports") == (0, 2, 1)
    (reports,) = [r for r in live if r.queue == "reports"]
    assert reports.retried == 1  # the first failed run; the second ended the job
    assert reports.actor == actors.load_report.name  # per actor too (the actors page)
    assert {r.actor for r in live if r.queue == "default"} == {actors.add.name}

    later = now + timedelta(minutes=2)  # the jobs' minute has closed: counted, stored
    await insight.record_activity(now=later)
    await insight.record_activity(now=later)  # nothing more to count: no double count
    counted = await insight.activity(since, now=later)
    assert totals(counted, "default") == (5, 0, 0)
    assert totals(counted, "reports") == (0, 2, 1)
    assert all(r.minute <= later and r.actor == "" for r in counted)
    by_actor = await insight.activity(since, now=later, by_actor=True)
    assert {(r.queue, r.actor) for r in by_actor if r.succeeded or r.failed_runs} == {
        ("default", actors.add.name),
        ("reports", actors.load_report.name),
    }
    quarter = await insight.activity(since, bucket=900, queue="reports", now=later)
    assert {r.queue for r in quarter} == {"reports"} and totals(quarter, "reports") == (0, 2, 1)
    assert all(r.minute.timestamp() % 900 == 0 for r in quarter)

    two_days = later + timedelta(days=2, minutes=5)  # counted minutes are kept 2 days
    await insight.record_activity(now=two_days)
    assert totals(await insight.activity(since, now=two_days), "default") == (0, 0, 0)


async def test_the_backlog_age_sampled_in_a_minute_is_its_largest(store) -> None:
    insight = store.insight
    now = datetime.now(UTC).replace(second=30)
    for age in (5.0, 12.5, 7.0):
        await insight.record_activity([QueueDepth("q", queued=1, oldest_due_age=age)], now=now)
    (row,) = [
        r for r in await insight.activity(now - timedelta(hours=1), now=now) if r.queue == "q"
    ]
    assert row.backlog_age == 12.5 and row.minute == now.replace(second=0, microsecond=0)


async def test_search_by_id_prefix_arguments_and_meta_alike_on_both_stores(store, client) -> None:
    small = client.enqueue(actors.add, 1, 2)
    big = client.enqueue(actors.add, 3, 4)
    paid = client.enqueue_with(
        actors.charge, ["4111"], {"amount": 5}, meta={"tenant": 7, "tags": ["a", "b"]}
    )
    other = client.enqueue_with(actors.charge, ["4222"], {"amount": 6}, meta={"tenant": 8})

    async def found(**filters: str) -> set:
        return {j.id for j in await store.insight.browse_jobs(JobFilter(**filters))}

    assert await found(args="[3]") == {big}
    assert await found(args="3") == {big}  # one positional argument
    assert await found(args="[1, 2]") == {small}
    assert await found(args='["4111"]') == {paid}
    assert await found(args='{"amount": 5}') == {paid}  # keyword arguments
    assert await found(meta='{"tenant": 7}') == {paid}
    assert await found(meta='{"tags": ["b"]}') == {paid}
    assert await found(meta="{}") == {paid, other}  # every job with meta
    assert await found(args='{"amount": 5}', meta='{"tenant": 8}') == set()
    text = str(paid)
    assert paid in await found(id_prefix=text[:8])
    assert await found(id_prefix=text) == {paid}
    assert await found(id_prefix=text.replace("-", "")[:31]) == {paid}
    assert await found(id_prefix=text.upper()) == {paid}
    assert await found(id_prefix="ffffffff") == set()
    for bad in ({"id_prefix": "xyz"}, {"args": "[1,"}, {"meta": "[1]"}):
        with pytest.raises(ConfigError):
            await found(**bad)


async def test_count_is_bounded_by_its_cap(store, client) -> None:
    client.enqueue_many(actors.add, [((i, i), {}) for i in range(30)])
    insight = store.insight
    assert await insight.count_jobs(JobFilter(state="queued"), cap=1000) == 30
    assert await insight.count_jobs(JobFilter(state="queued"), cap=10) == 10
    assert await insight.count_jobs(JobFilter(state="dead"), cap=10) == 0


async def test_dead_jobs_of_one_queue_are_browsed_and_counted_alike(store, client) -> None:
    """SQLite reads one queue's dead jobs through its partial index (a statement of its
    own); the answer is the same as the general one, on both stores."""
    for i in range(3):
        client.enqueue(actors.load_report, f"/{i}.csv")
    client.enqueue_with(actors.load_report, ["/other.csv"], queue="elsewhere")
    drain(client, registry=actors.registry)
    filters = JobFilter(state="dead", queue="reports")
    page = await store.insight.browse_jobs(filters, limit=2)
    rest = await store.insight.browse_jobs(filters, before=page[-1].id, limit=2)
    assert len(page) == 2 and len(rest) == 1
    assert {j.queue for j in page + rest} == {"reports"}
    assert [j.id for j in page + rest] == sorted((j.id for j in page + rest), reverse=True)
    assert await store.insight.count_jobs(filters, cap=10) == 3
    assert await store.insight.browse_jobs(JobFilter(state="dead", queue="none")) == []
