"""The shipped alert rules name metrics taskq really exports (a renamed metric would
otherwise silence an alert without anyone noticing)."""

from __future__ import annotations

import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from taskq import metrics

ALERTS = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "alerts.yml"


def exported_names() -> set[str]:
    names: set[str] = set()
    for registry in (metrics.WORKER, metrics.WORKGROUP):
        for family in text_string_to_metric_families(metrics.render(registry).decode()):
            names.add(family.name)
            names.update(sample.name for sample in family.samples)
        names.update(registry.names())  # also the families with no sample yet
    return names


def test_every_metric_in_the_alert_rules_is_exported():
    text = ALERTS.read_text()
    exprs = re.findall(r"^\s*expr:\s*(.+)$", text, re.MULTILINE)
    assert len(exprs) >= 6
    used = {name for expr in exprs for name in re.findall(r"\btaskq_[a-z_]+", expr)}
    assert used, "no taskq metric in the rules"
    assert used <= exported_names(), used - exported_names()


def test_alert_rules_cover_the_seed_conditions():
    text = ALERTS.read_text()
    for expr in (
        "rate(taskq_pool_worker_restarts_total[5m]) > 0.1",
        "taskq_pool_workers_alive < taskq_pool_workers_configured",
        "increase(taskq_process_pool_breaks_total[1h]) > 1",
        "increase(taskq_pool_items_dead_lettered_total[10m]) > 0",
        "taskq_workgroup_children_latched > 0",
        "rate(taskq_workgroup_child_restarts_total[5m]) > 0.1",
    ):
        assert expr in text, expr
