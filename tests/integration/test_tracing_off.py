"""Without an OpenTelemetry SDK configured (OpenTelemetry's API alone records nothing),
enqueue stores no traceparent: a job's meta is what the caller gave."""

from __future__ import annotations

import pytest

pytest.importorskip("opentelemetry")

from opentelemetry import trace

from taskq.client import Client
from tests.support.otel_actors import traced_ok


def test_without_an_sdk_nothing_travels_in_the_job(target, store) -> None:
    del store  # migrated
    provider = trace.get_tracer_provider()
    assert type(provider).__module__.startswith("opentelemetry.trace"), provider  # the API's
    with Client(target.dsn, schema=target.schema) as client:
        job = client.get(client.enqueue_with(traced_ok, [1], meta={"k": 1}))
        plain = client.get(client.enqueue(traced_ok, 2))
    assert job.meta == {"k": 1}
    assert not plain.meta
