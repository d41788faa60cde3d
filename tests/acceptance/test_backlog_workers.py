"""Backlog metrics from any worker (issue 20 item 4): real ``taskq worker`` processes
outside a workgroup compete for the ``backlog-metrics`` lease with each other and with
workgroup supervisors, so a fleet reports ``taskq_queue_jobs`` exactly once."""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from taskq import AsyncClient, exit_codes
from tests.support import worker_actors as actors
from tests.support.helpers import async_wait_until, wait_until
from tests.support.worker_harness import WorkerProcess, http_get_sync, worker_processes
from tests.support.workgroup_harness import Workgroup, workgroup_processes, write_config

pytestmark = pytest.mark.slow

Series = dict[str, list]


def parse(body: str) -> Series:
    out: Series = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def scrape_worker(worker: WorkerProcess) -> Series:
    port = worker.wait_for_event("health-server-started")["port"]
    code, body = http_get_sync("/metrics", port=port)
    assert code == 200, body
    return parse(body)


def leader_value(series: Series) -> float | None:
    """This process's own ``taskq_backlog_leader`` (not a workgroup child's)."""
    own = [s.value for s in series.get("taskq_backlog_leader", []) if "worker" not in s.labels]
    return own[0] if own else None


def queued(series: Series, queue: str) -> float | None:
    hits = [
        s.value
        for s in series.get("taskq_queue_jobs", [])
        if s.labels["queue"] == queue and s.labels["state"] == "queued"
    ]
    return hits[0] if hits else None


@pytest.fixture
def spawn(target, tmp_path: Path) -> Iterator[Callable[..., WorkerProcess]]:
    with worker_processes(target, tmp_path, "--health-port", "0") as start:
        yield start


async def test_a_fleet_of_bare_workers_reports_the_backlog_exactly_once(store, spawn):
    async with AsyncClient(store=store) as client:
        for _ in range(3):  # a backlog on a queue no worker consumes
            await client.enqueue_with(actors.noop, queue="nobody")
    workers = [spawn() for _ in range(3)]

    def one_leader() -> list[Series] | None:
        scraped = [scrape_worker(w) for w in workers]
        values = [leader_value(s) for s in scraped]
        return scraped if sorted(values) == [0.0, 0.0, 1.0] else None

    scraped = wait_until(one_leader, timeout=60, what="exactly one backlog leader of three")
    (leader,) = [w for w, s in zip(workers, scraped, strict=True) if leader_value(s) == 1.0]
    for worker, series in zip(workers, scraped, strict=True):
        if worker is leader:
            assert queued(series, "nobody") == 3.0
            assert series["taskq_queue_oldest_age_seconds"]
        else:
            assert "taskq_queue_jobs" not in series
            assert "taskq_queue_oldest_age_seconds" not in series
    (took,) = leader.events("backlog-metrics")
    assert took["leader"] is True

    # the leader stops: it gives the lease back, and one of the others takes over
    leader.signal(signal.SIGTERM)
    assert leader.wait() == exit_codes.OK
    rest = [w for w in workers if w is not leader]

    def taken_over() -> bool:
        scraped = [scrape_worker(w) for w in rest]
        values = sorted(leader_value(s) or 0.0 for s in scraped)
        return values == [0.0, 1.0] and any(queued(s, "nobody") == 3.0 for s in scraped)

    wait_until(taken_over, timeout=60, what="another worker taking over the backlog metrics")


async def test_a_workgroup_and_a_bare_worker_share_one_lease(target, store, spawn, tmp_path: Path):
    """Mixed fleets too: one leader across the supervisor and the bare worker, and the
    workgroup's child exports no backlog series of its own."""
    config = write_config(
        tmp_path / "wg.toml",
        '[supervisor]\nhttp_port = 0\nshutdown_grace = 10\n[[workers]]\nname = "api"\n',
        actors="tests.support.worker_actors:registry",
    )
    with workgroup_processes() as start:
        wg: Workgroup = start(config, target.env)
        worker = spawn()

        def leaders() -> tuple[Series, Series] | None:
            code, body = wg.get("/metrics")
            assert code == 200, body
            supervisor, bare = parse(body), scrape_worker(worker)
            child_scraped = any(
                s.labels.get("worker") == "api"
                for s in supervisor.get("taskq_loop_lag_seconds", [])
            )
            values = [leader_value(supervisor), leader_value(bare)]
            if not child_scraped or None in values or sum(v or 0.0 for v in values) != 1:
                return None
            return supervisor, bare

        supervisor, _ = wait_until(leaders, timeout=60, what="one leader in a mixed fleet")
        for name in ("taskq_backlog_leader", "taskq_queue_jobs", "taskq_queue_paused"):
            assert not [s for s in supervisor.get(name, []) if "worker" in s.labels], name
        assert wg.stop() == 0


async def test_the_backlog_leader_samples_the_backlog_age_for_the_charts(store, spawn) -> None:
    """The leader also feeds the dashboard's charts (Insight.record_activity): the age of
    a queue's oldest due job, in the current minute, with no dashboard open."""
    async with AsyncClient(store=store) as client:
        await client.enqueue_with(actors.noop, [], queue="nobody-consumes-this")
    worker = spawn()
    worker.wait_for_event("worker-started")

    async def sampled() -> list:
        rows = await store.insight.activity(datetime.now(UTC) - timedelta(minutes=5))
        return [r for r in rows if r.queue == "nobody-consumes-this" and r.backlog_age]

    (row,) = await async_wait_until(sampled, timeout=30, what="a backlog age sample")
    assert row.backlog_age > 0
