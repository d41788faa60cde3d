"""OpenTelemetry traces (the optional ``taskq[otel]`` extra): enqueue and run as spans,
one trace from the producer to the worker.

- **Enqueue.** ``EnqueueTracing``, a middleware every client runs (taskq/middleware.py):
  when ``opentelemetry`` is installed, every enqueue call is a ``taskq enqueue <actor>``
  span (kind PRODUCER; attributes ``taskq.actor``, ``taskq.queue``, ``taskq.job.count``
  and, for one job, ``taskq.job.id``; status ERROR when the write failed), a child of
  the caller's current span, and the W3C ``traceparent`` of that span is stored in each
  job's ``meta`` (key ``traceparent``; ``before_enqueue``). An ``enqueue_workflow`` is
  one ``taskq enqueue workflow <name>`` span for the whole run (``taskq.workflow.id``,
  ``taskq.workflow.name``, ``taskq.workflow.steps`` and ``taskq.job.count``: the step
  count), its ``traceparent`` on every step's job, so each step's run span is its
  child. Without an SDK configured, OpenTelemetry's API is a no-op and nothing is
  stored.
- **Run.** ``TracingMiddleware`` (``TASKQ_WORKER_MIDDLEWARE=taskq.tracing:TracingMiddleware``)
  makes each run a ``taskq run <actor>`` span (kind CONSUMER), a child of the enqueue
  span when the job carries a ``traceparent``, current while the actor runs (spans the
  actor starts are its children), with ``taskq.job.id``, ``taskq.actor``,
  ``taskq.queue``, ``taskq.attempt`` and ``taskq.outcome`` (succeeded, retry, dead,
  crashed, cancelled, given_back); any outcome but success sets the span's status to
  ERROR. It is an ``EnqueueTracing`` too (a worker's own enqueues, if given it).

The process exports spans with whatever SDK and exporter it configured.
"""

from __future__ import annotations

import functools
import json
from typing import Any
from uuid import UUID

from .jobs import ClaimedJob, Outcome, OutcomeKind
from .middleware import Middleware
from .plan import EnqueuePlan, WorkflowPlan

META_KEY = "traceparent"
TRACER_NAME = "taskq"


@functools.cache
def _otel() -> Any:
    """OpenTelemetry's API (``.trace``, ``.propagate``, ``.context``), imported on first
    use rather than with taskq (start-up stays free of it); None without the otel extra:
    tracing is off."""
    try:
        import opentelemetry.context
        import opentelemetry.propagate
        import opentelemetry.trace
    except ImportError:
        return None
    return opentelemetry


def available() -> bool:
    return _otel() is not None


_cached: tuple[Any, Any] = (None, None)  # (provider, taskq's tracer from it)


def _tracer(otel: Any) -> Any:
    """taskq's tracer from the current provider; None when a span would be a no-op
    carrying no ``traceparent`` (no provider set and no span current), so none is made:
    it costs ~15 us a call. One tracer per provider, asked for once."""
    global _cached
    trace = otel.trace
    provider = trace.get_tracer_provider()
    if (
        isinstance(provider, trace.ProxyTracerProvider)
        and not trace.get_current_span().get_span_context().is_valid
    ):
        return None
    if _cached[0] is not provider:
        _cached = (provider, provider.get_tracer(TRACER_NAME))
    return _cached[1]


class EnqueueTracing(Middleware):
    """Each enqueue call a PRODUCER span whose ``traceparent`` travels in the jobs' meta
    (see the module docstring). Every client runs one; without OpenTelemetry, or
    without an SDK and a current span, it does nothing (no span is made: ~15 us)."""

    def __init__(self) -> None:
        self._spans: dict[int, Any] = {}  # id(plan) -> its open span

    def before_enqueue(self, plan: EnqueuePlan) -> None:
        otel = _otel()
        tracer = None if otel is None else _tracer(otel)
        if tracer is None or not len(plan):
            return
        name, attributes = _enqueue_span(plan)
        span = tracer.start_span(name, kind=otel.trace.SpanKind.PRODUCER, attributes=attributes)
        carrier: dict[str, str] = {}
        otel.propagate.inject(carrier, context=otel.trace.set_span_in_context(span))
        traceparent = carrier.get(META_KEY)
        try:
            if traceparent:
                plan.add_meta(META_KEY, traceparent)
        except BaseException as exc:  # refused (meta over its limit): no span left open
            self._end(span, exc)
            raise
        self._spans[id(plan)] = span

    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        span = self._spans.pop(id(plan), None)
        if span is not None:
            self._end(span, error)

    @staticmethod
    def _end(span: Any, error: BaseException | None) -> None:
        if error is not None:
            trace = _otel().trace
            span.set_status(trace.Status(trace.StatusCode.ERROR, type(error).__name__))
        span.end()


def _enqueue_span(plan: EnqueuePlan) -> tuple[str, dict[str, Any]]:
    """The name and attributes of a plan's enqueue span."""
    count = len(plan)
    attributes: dict[str, Any] = {"taskq.job.count": count, "messaging.system": "taskq"}
    if isinstance(plan, WorkflowPlan):
        attributes["taskq.workflow.id"] = str(plan.workflow_id)
        attributes["taskq.workflow.name"] = plan.workflow_name
        attributes["taskq.workflow.steps"] = count
        name = f"taskq enqueue workflow {plan.workflow_name}"
    else:
        name = f"taskq enqueue {plan.actor}"
        if count == 1:
            attributes["taskq.job.id"] = str(plan.ids[0])
    # a workflow's steps of one actor, or on one queue, say so too
    for key, value in (("taskq.actor", plan.actor), ("taskq.queue", plan.queue)):
        if value != "*":
            attributes[key] = value
    if "taskq.queue" in attributes:
        attributes["messaging.destination.name"] = attributes["taskq.queue"]
    return name, attributes


def _parent(job: ClaimedJob) -> Any:
    if not job.meta_json:
        return None
    try:
        traceparent = json.loads(job.meta_json).get(META_KEY)
    except (ValueError, AttributeError):
        return None
    if not isinstance(traceparent, str):
        return None
    return _otel().propagate.extract({META_KEY: traceparent})


class TracingMiddleware(EnqueueTracing):
    """Each run a span, child of its enqueue span (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self._otel = _otel()
        if self._otel is None:
            from .exceptions import ConfigError

            raise ConfigError(
                "taskq.tracing:TracingMiddleware needs OpenTelemetry: pip install 'taskq[otel]'"
            )
        self._tracer = self._otel.trace.get_tracer(TRACER_NAME)
        self._open: dict[tuple[UUID, int], tuple[Any, object]] = {}

    def before_job(self, job: ClaimedJob) -> None:
        span = self._tracer.start_span(
            f"taskq run {job.actor}",
            context=_parent(job),
            kind=self._otel.trace.SpanKind.CONSUMER,
            attributes={
                "taskq.job.id": str(job.id),
                "taskq.actor": job.actor,
                "taskq.queue": job.queue,
                "taskq.attempt": job.attempt,
                "messaging.system": "taskq",
                "messaging.destination.name": job.queue,
            },
        )
        token = self._otel.context.attach(self._otel.trace.set_span_in_context(span))
        self._open[(job.id, job.attempt)] = (span, token)

    def after_job(self, job: ClaimedJob, outcome: Outcome | None) -> None:
        found = self._open.pop((job.id, job.attempt), None)
        if found is None:
            return
        span, token = found
        kind = "given_back" if outcome is None else str(outcome.kind)
        span.set_attribute("taskq.outcome", kind)
        if outcome is not None and outcome.kind is not OutcomeKind.SUCCEEDED:
            trace = self._otel.trace
            span.set_status(trace.Status(trace.StatusCode.ERROR, (outcome.error or kind)[:200]))
        try:
            self._otel.context.detach(token)
        finally:
            span.end()
