"""The supervisor's ``/metrics`` carries every child's worker metrics, so the shipped
alert rules can fire against a workgroup (whose children only serve Unix sockets)."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from taskq.client import Client
from tests.support.helpers import wait_until
from tests.support.workgroup_actors import fail, noop
from tests.support.workgroup_harness import Workgroup, write_config

pytestmark = pytest.mark.slow

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"
CONFIG = """
[supervisor]
http_port = 0
backoff_initial = 0.05
backoff_max = 0.1
shutdown_grace = 10

[[workers]]
name = "api"
poll_interval = 0.1

[[workers]]
name = "batch"
queues = ["email", "report"]
"""


def scrape(wg: Workgroup) -> dict[str, list]:
    """{sample name: [samples]} and {"# family": [...]} for each family name."""
    code, body = wg.get("/metrics")
    assert code == 200, body
    out: dict[str, list] = {}
    for family in text_string_to_metric_families(body):
        out.setdefault("# " + family.name, [])
        for sample in family.samples:
            out.setdefault(sample.name, []).append(sample)
    return out


def alert_names() -> set[str]:
    exprs = re.findall(r"^\s*expr:\s*(.+)$", ALERTS.read_text(), re.MULTILINE)
    return {name for expr in exprs for name in re.findall(r"\btaskq_[a-z_]+", expr)}


def workers_of(series: dict[str, list], name: str) -> set[str]:
    return {s.labels.get("worker") for s in series.get(name, [])}


@pytest.fixture
def workgroup(target, store, tmp_path: Path) -> Iterator[Workgroup]:
    del store  # migrated
    wg = Workgroup(write_config(tmp_path / "wg.toml", CONFIG), target.env)
    try:
        yield wg
    finally:
        wg.cleanup()


def test_every_series_of_the_alert_rules_is_scraped_from_the_supervisor(
    target, workgroup: Workgroup
) -> None:
    wg = workgroup
    wg.started_pid("api")
    wg.started_pid("batch")
    with Client(target.dsn, schema=target.schema) as client:
        client.enqueue(fail)  # a dead letter: taskq_pool_items_dead_lettered_total{worker=api}
        # a backlog on a queue nobody consumes, the oldest due for two minutes
        past = datetime.now(UTC) - timedelta(seconds=120)
        client.enqueue_with(noop, queue="nobody", run_at=past)
        client.enqueue_with(noop, queue="nobody")
        client.enqueue_with(noop, queue="nobody", delay=3600)

    def backlog(s: dict[str, list], queue: str, state: str) -> float | None:
        hits = [
            x.value
            for x in s.get("taskq_queue_jobs", [])
            if x.labels["queue"] == queue and x.labels["state"] == state
        ]
        return hits[0] if hits else None

    series = wait_until(
        lambda: (
            (s := scrape(wg))
            and workers_of(s, "taskq_pool_workers_alive") == {"api", "batch"}
            and "api" in workers_of(s, "taskq_pool_items_dead_lettered_total")
            and backlog(s, "default", "dead") == 1
            and backlog(s, "nobody", "queued") == 3
            and s
        ),
        timeout=60,
        what="both children's metrics and the dead letter in the supervisor's scrape",
    )
    for name in sorted(alert_names()):
        if name == "taskq_process_pool_breaks_total":
            # labelled by cause: a series appears with the first break; the family is there
            assert "# taskq_process_pool_breaks" in series, name
            continue
        assert series.get(name), f"{name} not in the supervisor's /metrics"
    configured = {s.labels["worker"]: s.value for s in series["taskq_pool_workers_configured"]}
    alive = {s.labels["worker"]: s.value for s in series["taskq_pool_workers_alive"]}
    assert alive == configured and all(v > 0 for v in alive.values())
    (dead,) = [
        s for s in series["taskq_pool_items_dead_lettered_total"] if s.labels["worker"] == "api"
    ]
    assert (dead.labels["queue"], dead.labels["actor"], dead.labels["reason"]) == (
        fail.queue,
        fail.name,
        "failed",
    )
    assert dead.value == 1
    ok = {s.labels["worker"]: s.value for s in series["taskq_workgroup_child_scrape_ok"]}
    assert ok == {"api": 1.0, "batch": 1.0}
    # the backlog, computed by this supervisor (the only one: it holds the lease)
    (leader,) = series["taskq_backlog_leader"]
    assert leader.value == 1
    ages = {s.labels["queue"]: s.value for s in series["taskq_queue_oldest_age_seconds"]}
    assert ages["nobody"] >= 120
    assert ages["email"] == 0  # configured queues are there, at zero
    assert backlog(series, "email", "queued") == 0
    # the backlog, computed by this supervisor (the only one: it holds the lease)
    (leader,) = series["taskq_backlog_leader"]
    assert leader.value == 1
    ages = {s.labels["queue"]: s.value for s in series["taskq_queue_oldest_age_seconds"]}
    assert ages["nobody"] >= 120
    assert ages["email"] == 0  # configured queues are there, at zero
    assert backlog(series, "email", "queued") == 0


def test_a_dead_child_drops_out_and_its_replacement_is_scraped(
    target, workgroup: Workgroup
) -> None:
    wg = workgroup
    first = wg.started_pid("api")
    wg.started_pid("batch")
    wait_until(
        lambda: workers_of(scrape(wg), "taskq_pool_workers_alive") == {"api", "batch"},
        timeout=60,
        what="both children scraped",
    )
    os.kill(first, signal.SIGKILL)
    wg.started_pid("api", nth=2)
    series = wait_until(
        lambda: (
            (s := scrape(wg))
            and workers_of(s, "taskq_pool_workers_alive") == {"api", "batch"}
            and s
        ),
        timeout=60,
        what="the replacement child scraped",
    )
    restarts = {
        (s.labels["worker"], s.labels["reason"]): s.value
        for s in series["taskq_workgroup_child_restarts_total"]
    }
    assert restarts[("api", "child_exit")] == 1
    assert {s.labels["worker"]: s.value for s in series["taskq_workgroup_child_scrape_ok"]} == {
        "api": 1.0,
        "batch": 1.0,
    }


def test_two_workgroups_on_one_store_compute_the_backlog_once(
    target, workgroup: Workgroup, tmp_path: Path
) -> None:
    other = Workgroup(
        write_config(tmp_path / "other.toml", CONFIG.replace('"api"', '"api2"')), target.env
    )
    try:

        def leaders() -> list[float] | None:
            values = []
            for wg in (workgroup, other):
                samples = scrape(wg).get("taskq_backlog_leader")
                if not samples:
                    return None
                values.append(samples[0].value)
            return values if sum(values) == 1 else None

        values = wait_until(leaders, timeout=60, what="exactly one backlog leader")
        leader, follower = (workgroup, other) if values[0] == 1 else (other, workgroup)
        assert scrape(leader).get("taskq_queue_jobs")
        assert not scrape(follower).get("taskq_queue_jobs")
        # the leader stops cleanly: it gives the lease back and the other takes over
        assert leader.stop() == 0
        wait_until(
            lambda: [s.value for s in scrape(follower).get("taskq_backlog_leader", [])] == [1.0],
            timeout=60,
            what="the other supervisor taking over the backlog metrics",
        )
        assert scrape(follower).get("taskq_queue_jobs")
    finally:
        other.cleanup()
