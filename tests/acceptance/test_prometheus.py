"""A real Prometheus (issue 23 item 4): scraping a real workgroup supervisor and a real
bare ``taskq worker``, evaluating the shipped alert rules (deploy/prometheus/alerts.yml)
every second, read through its HTTP API. The series are there with the labels the docs
name, the fleet's backlog comes from one of the two, every rule evaluates without error,
a dead letter fires its alert end to end, and every query of the Grafana dashboard
(deploy/grafana/taskq.json) evaluates."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from taskq import AsyncClient
from tests.support import worker_actors as actors
from tests.support.helpers import wait_until
from tests.support.prometheus_server import INSTALL, RULES, Prometheus, installed
from tests.support.worker_harness import wait_for_states, worker_processes
from tests.support.workgroup_harness import workgroup_processes, write_config
from tests.unit.test_grafana_dashboard import DASHBOARD, queries

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(installed() is None, reason=f"prometheus is not installed ({INSTALL})"),
]

WORKGROUP = """
[supervisor]
http_port = 0
shutdown_grace = 10
[[workers]]
name = "api"
queues = ["default"]
poll_interval = 0.1
"""
#: series that exist only once their event happened (a pool break of some cause)
ONLY_AFTER_AN_EVENT = {"taskq_process_pool_breaks_total"}


def rule_metric_names() -> set[str]:
    groups = yaml.safe_load(RULES.read_text())["groups"]
    exprs = [rule["expr"] for group in groups for rule in group["rules"]]
    return {name for expr in exprs for name in re.findall(r"\btaskq_[a-z_]+", expr)}


@pytest.fixture
def fleet(target, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A workgroup (one child, queue default) and a bare worker (queue other): the
    scrape address of each."""
    config = write_config(
        tmp_path / "wg.toml", WORKGROUP, actors="tests.support.worker_actors:registry"
    )
    with (
        workgroup_processes() as start,
        worker_processes(target, tmp_path, "--health-port", "0", "--queues", "other") as spawn,
    ):
        workgroup, worker = start(config, target.env), spawn()
        worker.wait_for_event("worker-started")
        workgroup.wait_event("worker-started", worker="api")
        port = worker.wait_for_event("health-server-started")["port"]
        yield f"127.0.0.1:{workgroup.port}", f"127.0.0.1:{port}"
        assert workgroup.stop() == 0


async def test_a_real_prometheus_scrapes_a_workgroup_and_a_worker(store, fleet):
    supervisor, bare = fleet
    async with AsyncClient(store=store) as client:
        done = await client.enqueue(actors.noop)
        dead = await client.enqueue(actors.always_fails, "x")
        await client.enqueue_with(actors.noop, queue="nobody")  # a backlog nobody runs
        await wait_for_states(store, [done, dead], {"succeeded", "dead"})
    prometheus = Prometheus([supervisor, bare]).start()
    try:
        targets = wait_until(
            lambda: (
                (t := prometheus.api("targets")["activeTargets"])
                and len(t) == 2
                and all(x["health"] == "up" for x in t)
                and t
            ),
            timeout=60,
            what="both targets scraped and up",
        )
        assert {x["labels"]["instance"] for x in targets} == {supervisor, bare}

        def value(expr: str) -> float | None:
            result = prometheus.query(expr)
            return float(result[0]["value"][1]) if len(result) == 1 else None

        # the consumers of both processes: the child's labelled by the supervisor
        alive = wait_until(
            lambda: len(r := prometheus.query("taskq_pool_workers_alive")) == 2 and r,
            what="both processes' consumers",
        )
        assert {(s["metric"]["instance"], s["metric"].get("worker")) for s in alive} == {
            (supervisor, "api"),
            (bare, None),
        }
        assert value("taskq_workgroup_children_alive") == 1.0
        # the fleet's backlog: one leader between the supervisor and the bare worker
        wait_until(lambda: value("sum(taskq_backlog_leader)") == 1.0, what="one leader")
        wait_until(
            lambda: value('sum(taskq_queue_jobs{queue="nobody",state="queued"})') == 1.0,
            what="the backlog of queue nobody",
        )
        # job metrics by queue
        finished = 'taskq_jobs_finished_total{queue="default",actor="noop",outcome="succeeded"}'
        ran = wait_until(
            lambda: {s["metric"].get("worker"): s["value"][1] for s in prometheus.query(finished)},
            what="the finished job",
        )
        assert ran == {"api": "1", None: "0"}  # the child ran it; the bare worker has the series
        # every series the rules use is there
        names = set(prometheus.api("label/__name__/values"))
        assert sorted(rule_metric_names() - names - ONLY_AFTER_AN_EVENT) == []

        # every rule loaded and evaluated without error
        def evaluated() -> list[dict] | None:
            groups = prometheus.api("rules")["groups"]
            rules = [r for g in groups for r in g["rules"]]
            done = all(not r["lastEvaluation"].startswith("0001-") for r in rules)
            return rules if rules and done else None

        rules = wait_until(evaluated, timeout=60, what="every rule evaluated")
        shipped = yaml.safe_load(RULES.read_text())["groups"]
        assert sorted(r["name"] for r in rules) == sorted(
            rule["alert"] for group in shipped for rule in group["rules"]
        )
        assert [(r["name"], r.get("lastError")) for r in rules if r["health"] != "ok"] == []

        # the dead letter fires its alert, end to end
        def dead_letter_alert() -> dict | None:
            alerts = prometheus.api("alerts")["alerts"]
            hits = [a for a in alerts if a["labels"]["alertname"] == "TaskqJobsDeadLettered"]
            return hits[0] if hits and hits[0]["state"] == "firing" else None

        alert = wait_until(dead_letter_alert, timeout=60, what="TaskqJobsDeadLettered firing")
        labels = alert["labels"]
        assert (labels["queue"], labels["actor"], labels["reason"], labels["worker"]) == (
            "default",
            "always_fails",
            "failed",
            "api",
        )
        assert alert["annotations"]["summary"] == (
            "taskq jobs of always_fails on queue default dead-lettered (failed)"
        )
        # (the alerts API lists pending alerts too: one evaluation between two scrapes, or
        # between two leaders, can make this one pending; firing takes 5 minutes of it)
        alerts = prometheus.api("alerts")["alerts"]
        firing = {a["labels"]["alertname"] for a in alerts if a["state"] == "firing"}
        assert "TaskqBacklogMetricsMissing" not in firing

        # every query of the Grafana dashboard is PromQL this Prometheus evaluates
        document = json.loads(DASHBOARD.read_text())
        panels = [(w, q) for w, q in queries(document) if w.startswith("panel")]
        for where, query in panels:
            expr = query.replace("$__rate_interval", "1m").replace("$queue", ".*")
            assert prometheus.api("query", query=expr)["resultType"] == "vector", where
    finally:
        prometheus.stop()
