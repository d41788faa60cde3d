"""taskq's own metric values expose exactly the text prometheus_client's metrics would."""

from __future__ import annotations

import re

import prometheus_client
import pytest

from taskq import metrics

BUCKETS = (0.001, 0.5, 1, 300)


def drive(counter, labelled, gauge, tagged_gauge, histogram) -> None:
    counter.inc()
    counter.inc(2.5)
    labelled.labels("a", "succeeded").inc()
    labelled.labels(actor="b", outcome="dead").inc(3)
    labelled.labels("a", "succeeded").inc()
    gauge.set(4)
    gauge.inc()
    gauge.dec(0.5)
    tagged_gauge.labels("q1").set(True)
    tagged_gauge.labels("q2").set(7)
    for value in (0.0005, 0.001, 0.2, 1, 299.9, 301, 1e9):
        histogram.labels("a").observe(value)
    histogram.labels("b").observe(0.7)


def exposed(registry) -> str:
    # creation times differ between the two: compare everything else
    text = prometheus_client.generate_latest(registry).decode()
    return re.sub(r"^(\w+_created(\{[^}]*\})?) \S+$", r"\1 T", text, flags=re.MULTILINE)


def test_exposition_matches_prometheus_client() -> None:
    ours = metrics.Registry()
    theirs = prometheus_client.CollectorRegistry(auto_describe=True)
    for kind, registry in ((metrics, ours), (prometheus_client, theirs)):
        drive(
            kind.Counter("t_plain", "A counter.", registry=registry),
            kind.Counter("t_runs", "By actor.", ["actor", "outcome"], registry=registry),
            kind.Gauge("t_alive", "A gauge.", registry=registry),
            kind.Gauge("t_paused", "By queue.", ["queue"], registry=registry),
            kind.Histogram(
                "t_seconds", "Durations.", ["actor"], buckets=BUCKETS, registry=registry
            ),
        )
        kind.Counter("t_unused", "Labelled, no sample yet.", ["x"], registry=registry)
    assert exposed(ours) == exposed(theirs)
    assert metrics.render(ours).decode().count("# TYPE") == exposed(theirs).count("# TYPE")


def test_values_read_back_and_clear() -> None:
    registry = metrics.Registry()
    runs = metrics.Counter("t_runs", "By actor.", ["actor"], registry=registry)
    paused = metrics.Gauge("t_paused", "By queue.", ["queue"], registry=registry)
    runs.labels("a").inc(2)
    paused.labels("q").set(1)
    assert registry.get_sample_value("t_runs_total", {"actor": "a"}) == 2.0
    assert registry.get_sample_value("t_paused", {"queue": "q"}) == 1.0
    paused.clear()
    assert registry.get_sample_value("t_paused", {"queue": "q"}) is None
    assert registry.names() == {"t_runs_total", "t_runs_created", "t_paused"}


def test_misuse_is_refused_as_prometheus_client_does() -> None:
    registry = metrics.Registry()
    runs = metrics.Counter("t_runs", "By actor.", ["actor"], registry=registry)
    plain = metrics.Counter("t_plain", "Plain.", registry=registry)
    with pytest.raises(ValueError):
        runs.inc()  # labelled: which value?
    with pytest.raises(ValueError):
        runs.labels("a", "b")
    with pytest.raises(ValueError):
        plain.inc(-1)  # counters only go up
