"""Actors for the tracing test, in a worker process that exports its spans to the JSON
lines file named by ``TASKQ_TEST_SPANS`` (one object per finished span)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

import taskq


class JsonLinesExporter(SpanExporter):
    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        with self._lock, open(self._path, "a", encoding="utf-8") as out:
            for span in spans:
                ctx = span.get_span_context()
                out.write(
                    json.dumps(
                        {
                            "name": span.name,
                            "trace_id": f"{ctx.trace_id:032x}",
                            "span_id": f"{ctx.span_id:016x}",
                            "parent_span_id": f"{span.parent.span_id:016x}"
                            if span.parent
                            else None,
                            "kind": span.kind.name,
                            "status": span.status.status_code.name,
                            "attributes": dict(span.attributes or {}),
                        }
                    )
                    + "\n"
                )
        return SpanExportResult.SUCCESS


if os.environ.get("TASKQ_TEST_SPANS"):
    provider = TracerProvider()
    provider.add_span_processor(
        SimpleSpanProcessor(JsonLinesExporter(os.environ["TASKQ_TEST_SPANS"]))
    )
    trace.set_tracer_provider(provider)

registry = taskq.Registry()


@registry.actor(queue="traced")
def traced_ok(n: int) -> int:
    with trace.get_tracer("app").start_as_current_span("inside the job"):
        return n * 2


@registry.actor(queue="traced", max_attempts=1)
async def traced_fail() -> None:
    with trace.get_tracer("app").start_as_current_span("inside the async job"):
        raise RuntimeError("traced failure")
