"""OpenTelemetry: enqueue is a span, its traceparent travels in the job, and the run in
a real worker process is its child span (the worker exports to a file the test reads;
the test process records its own spans with the SDK's in-memory exporter)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util._once import Once

from taskq.client import Client
from tests.support.helpers import wait_until
from tests.support.otel_actors import traced_fail, traced_ok
from tests.support.workgroup_harness import REPO, run_cli, taskq_env

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    """The SDK with an in-memory exporter as this process's tracer provider, for this
    module only: afterwards the global provider is reset (as OpenTelemetry's own tests
    do), so no later test's jobs get a traceparent."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    trace.set_tracer_provider(provider)
    try:
        yield memory
    finally:
        provider.shutdown()
        trace._TRACER_PROVIDER = None
        trace._TRACER_PROVIDER_SET_ONCE = Once()


@pytest.fixture
def worker(target, tmp_path: Path) -> Iterator[Path]:
    spans = tmp_path / "worker-spans.jsonl"
    env = {
        **target.env,
        "TASKQ_TEST_SPANS": str(spans),
        "TASKQ_WORKER_MIDDLEWARE": "taskq.tracing:TracingMiddleware",
    }
    assert run_cli("migrate", env=env).returncode == 0
    with (tmp_path / "worker.log").open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "taskq",
                "worker",
                "--actors",
                "tests.support.otel_actors:registry",
                "--queues",
                "traced",
                "--poll-interval",
                "0.1",
            ],
            cwd=REPO,
            env=taskq_env(env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield spans
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


def read_spans(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_run_is_the_child_span_of_its_enqueue_across_processes(
    target, exporter: InMemorySpanExporter, worker: Path
) -> None:
    exporter.clear()
    tracer = trace.get_tracer("producer")
    with Client(target.dsn, schema=target.schema) as client:
        with tracer.start_as_current_span("http request"):
            ok_id = client.enqueue(traced_ok, 21)
            fail_id = client.enqueue(traced_fail)
        untraced = client.enqueue(traced_ok, 1)  # no current span: still a span of its own
        wait_until(
            lambda: (
                client.get(ok_id).state == "succeeded"
                and client.get(fail_id).state == "dead"
                and client.get(untraced).state == "succeeded"
            ),
            timeout=60,
            what="the traced jobs finished",
        )
        job = client.get(ok_id)
    local = {
        s.name: s
        for s in exporter.get_finished_spans()
        if s.name != "taskq enqueue " + traced_ok.name
    }
    enqueues = [s for s in exporter.get_finished_spans() if s.name.startswith("taskq enqueue")]
    request = local["http request"]
    assert len(enqueues) == 3
    by_job = {s.attributes["taskq.job.id"]: s for s in enqueues}
    enqueue_ok = by_job[str(ok_id)]
    assert enqueue_ok.parent.span_id == request.context.span_id  # enqueue: child of the caller
    assert enqueue_ok.kind.name == "PRODUCER"
    assert enqueue_ok.attributes["taskq.queue"] == "traced"
    tp = job.meta["traceparent"]
    assert tp.split("-")[1] == f"{request.context.trace_id:032x}"
    assert tp.split("-")[2] == f"{enqueue_ok.context.span_id:016x}"

    spans = wait_until(
        lambda: (
            (s := read_spans(worker))
            and len([x for x in s if x["name"].startswith("taskq run")]) == 3
            and s
        ),
        timeout=30,
        what="the worker's run spans exported",
    )
    runs = {x["attributes"]["taskq.job.id"]: x for x in spans if x["name"].startswith("taskq run")}
    run_ok, run_fail = runs[str(ok_id)], runs[str(fail_id)]
    assert run_ok["trace_id"] == f"{request.context.trace_id:032x}"
    assert run_ok["parent_span_id"] == f"{enqueue_ok.context.span_id:016x}"
    assert run_ok["kind"] == "CONSUMER" and run_ok["status"] != "ERROR"
    assert {
        "taskq.actor": traced_ok.name,
        "taskq.queue": "traced",
        "taskq.attempt": 1,
        "taskq.outcome": "succeeded",
    }.items() <= run_ok["attributes"].items()
    assert run_fail["parent_span_id"] == f"{by_job[str(fail_id)].context.span_id:016x}"
    assert run_fail["attributes"]["taskq.outcome"] == "dead"
    assert run_fail["status"] == "ERROR"
    # spans the actor starts are children of the run, sync (thread) and async alike
    inside = {(x["name"], x["parent_span_id"]) for x in spans if x["name"].startswith("inside")}
    assert inside == {
        ("inside the job", run_ok["span_id"]),
        ("inside the job", runs[str(untraced)]["span_id"]),
        ("inside the async job", run_fail["span_id"]),
    }
    # a job enqueued outside any span starts its own trace at its enqueue span
    lone = runs[str(untraced)]
    assert lone["parent_span_id"] == f"{by_job[str(untraced)].context.span_id:016x}"
    assert lone["trace_id"] != run_ok["trace_id"]


def test_a_workflow_enqueue_is_one_span_parent_of_every_steps_run(
    target, exporter: InMemorySpanExporter, worker: Path
) -> None:
    from taskq import group, step

    exporter.clear()
    tracer = trace.get_tracer("producer")
    wf = group(step(traced_ok, 1), step(traced_ok, 2), then=step(traced_ok, 3), name="traced")
    with Client(target.dsn, schema=target.schema) as client:
        with tracer.start_as_current_span("http request"):
            wf_id = client.enqueue_workflow(wf)
        info = wait_until(
            lambda: (i := client.workflow(wf_id)).state == "succeeded" and i,
            timeout=60,
            what="the traced workflow finished",
        )
        metas = [client.get(s.id).meta for s in info.steps]
    local = exporter.get_finished_spans()
    (request,) = [s for s in local if s.name == "http request"]
    (span,) = [s for s in local if s.name.startswith("taskq enqueue")]  # one for the run
    assert span.name == "taskq enqueue workflow traced"
    assert span.kind.name == "PRODUCER" and span.parent.span_id == request.context.span_id
    assert {
        "taskq.workflow.id": str(wf_id),
        "taskq.workflow.name": "traced",
        "taskq.workflow.steps": 3,
        "taskq.job.count": 3,
        "taskq.actor": traced_ok.name,  # every step is one actor's, on one queue
        "taskq.queue": "traced",
    }.items() <= dict(span.attributes).items()
    traceparent = f"00-{request.context.trace_id:032x}-{span.context.span_id:016x}-"
    assert [m["traceparent"][: len(traceparent)] for m in metas] == [traceparent] * 3
    assert len({m["traceparent"] for m in metas}) == 1  # the same on every step's job

    spans = wait_until(
        lambda: (
            (s := [x for x in read_spans(worker) if x["name"].startswith("taskq run")])
            and len(s) == 3
            and s
        ),
        timeout=30,
        what="the worker's run spans of the three steps",
    )
    assert {x["attributes"]["taskq.job.id"] for x in spans} == {str(s.id) for s in info.steps}
    assert {x["parent_span_id"] for x in spans} == {f"{span.context.span_id:016x}"}
    assert {x["trace_id"] for x in spans} == {f"{request.context.trace_id:032x}"}
