"""The Grafana dashboard (deploy/grafana/taskq.json) queries only what taskq exports:
every metric in every query (panels and template variables) is a sample name of
``taskq.metrics`` (a worker's, a workgroup's or the backlog's registry), and anything
else in a query is PromQL (functions, keywords, labels, durations, dashboard variables).
A renamed or removed metric fails here, not on an operator's screen."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from taskq import metrics

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy" / "grafana" / "taskq.json"

#: what a query may name besides metrics (PromQL functions, aggregations, keywords)
PROMQL = {
    "sum", "max", "min", "avg", "count", "topk", "bottomk", "quantile", "stddev",
    "rate", "irate", "increase", "delta", "deriv", "histogram_quantile", "label_values",
    "clamp_min", "clamp_max", "abs", "absent", "time", "vector", "scalar",
    "by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
    "unless", "offset", "bool",
}  # fmt: skip


def queries(document: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, query) for every target of every panel (rows' panels too) and every
    query variable."""

    def walk(panels: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
        for panel in panels:
            yield from walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                yield f"panel {panel['title']!r} {target['refId']}", target["expr"]

    yield from walk(document["panels"])
    for variable in document["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]
            yield (
                f"variable {variable['name']}",
                query["query"] if isinstance(query, dict) else query,
            )


def names_in(query: str) -> set[str]:
    """The identifiers of a PromQL query that are not labels, strings or durations."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', "", query)  # strings
    text = re.sub(r"\$\{?\w+\}?", "", text)  # dashboard variables ($queue, $__rate_interval)
    text = re.sub(r"\{[^}]*\}", "", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", "", text)  # ranges
    text = re.sub(r"(label_values\([^,()]+),\s*\w+\)", r"\1)", text)  # its label argument
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", r"\1", text)
    text = re.sub(r"\b\d+(\.\d+)?([smhdwy]|ms)?\b", "", text)  # numbers and durations
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text))


def exported() -> set[str]:
    return metrics.WORKER.names() | metrics.WORKGROUP.names() | metrics.BARE_WORKER.names()


def test_every_query_uses_only_metrics_taskq_exports() -> None:
    document = json.loads(DASHBOARD.read_text())
    found = list(queries(document))
    assert len(found) > 20
    known = exported()
    problems = []
    for where, query in found:
        names = names_in(query)
        used = {n for n in names if n not in PROMQL}
        if not used:
            problems.append(f"{where}: no taskq metric in {query!r}")
        problems += [f"{where}: {name} is not a metric taskq exports" for name in used - known]
    assert problems == []


def test_the_check_catches_a_metric_taskq_does_not_export() -> None:
    assert names_in('sum by (queue) (rate(taskq_jobs_finishd_total{queue=~"$queue"}[5m]))') - (
        PROMQL
    ) == {"taskq_jobs_finishd_total"}
    assert "up" in names_in("sum(up)") - exported()


def test_it_is_a_dashboard_on_a_prometheus_variable() -> None:
    document = json.loads(DASHBOARD.read_text())
    assert document["uid"] == "taskq-overview" and document["schemaVersion"] >= 36
    (source,) = [v for v in document["templating"]["list"] if v["type"] == "datasource"]
    assert source["query"] == "prometheus"
    for panel in document["panels"]:
        if panel["type"] != "row":
            assert panel["datasource"]["uid"] == "${datasource}", panel["title"]
    ids = [p["id"] for p in document["panels"]]
    assert len(ids) == len(set(ids))
