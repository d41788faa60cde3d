"""The job running in this context: ``taskq.current_job()``.

The worker sets a ``JobContext`` around every run, wherever the actor runs: awaited on
the event loop (async actors), in a thread (sync actors: the thread runs in a copy of
the consumer's context), or in a CPU pool process (the context's fields travel with the
job and the meta changes come back with the result). The same ``running`` block also
stamps the job's fields on every log record emitted during the run (``logs``).

An actor reads ``id``, ``actor``, ``queue``, ``attempt``, ``crash_count``, ``meta`` and
``cancel_requested``, and adds to ``meta`` while it runs (``update_meta(progress=0.5)``);
the worker saves the new meta with the run's outcome. A workflow's step also reads
``upstream`` (the results of the steps it runs after, by step name), ``workflow_id`` and
``step``, and may add steps to its workflow (``fan_out``: docs/workflows.md).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from .exceptions import NoCurrentJob
from .logs import reset_job_fields, set_job_fields
from .payload import encode_meta

if TYPE_CHECKING:
    from .workflows.fanout import FanOut

_NO_UPSTREAM: Mapping[str, Any] = MappingProxyType({})


class StepRun:
    """What a workflow's step knows of its workflow while it runs."""

    __slots__ = ("fan_out", "in_pool", "step", "upstream", "workflow_id")

    def __init__(
        self, workflow_id: UUID, step: str, upstream: Mapping[str, Any], in_pool: bool = False
    ) -> None:
        self.workflow_id = workflow_id
        self.step = step
        self.upstream = MappingProxyType(dict(upstream))
        self.in_pool = in_pool  # a CPU pool process: the run cannot add steps
        self.fan_out: FanOut | None = None


class JobContext:
    """The running job as its actor sees it."""

    __slots__ = (
        "_changed",
        "_meta",
        "_meta_json",
        "_workflow",
        "actor",
        "attempt",
        "cancel_requested",
        "crash_count",
        "id",
        "queue",
    )

    def __init__(
        self,
        id: UUID,
        *,
        actor: str,
        queue: str,
        attempt: int,
        crash_count: int = 0,
        meta: Mapping[str, Any] | None = None,
        cancel_requested: bool = False,
        meta_json: str | None = None,
    ) -> None:
        self.id = id
        self.actor = actor
        self.queue = queue
        self.attempt = attempt  # 1 on the first run
        self.crash_count = crash_count  # runners that died running this job so far
        self.cancel_requested = cancel_requested
        # ``meta_json`` (the job's meta as claimed) is decoded when first read: most runs
        # never look at their meta
        self._meta: dict[str, Any] | None = dict(meta) if meta else None
        self._meta_json = meta_json if meta is None else None
        self._changed = False
        self._workflow: StepRun | None = None

    # -- a workflow's step ---------------------------------------------------------------
    def join_workflow(self, run: StepRun) -> None:
        """This job is a workflow's step (the worker says so before it runs)."""
        self._workflow = run

    @property
    def workflow_id(self) -> UUID | None:
        """The workflow this job is a step of, or None."""
        return None if self._workflow is None else self._workflow.workflow_id

    @property
    def step(self) -> str | None:
        """This step's name in its workflow, or None."""
        return None if self._workflow is None else self._workflow.step

    @property
    def upstream(self) -> Mapping[str, Any]:
        """The results of the steps this step runs after, by step name (read-only; a
        step that ended without a result, or not succeeded (``on_failure="run"``), has
        ``None``). Empty for a job outside a workflow."""
        return _NO_UPSTREAM if self._workflow is None else self._workflow.upstream

    @property
    def fan_out(self) -> FanOut:
        """The steps this run adds to its workflow: ``current_job().fan_out.add(actor,
        *args, after=[...], name=..., **kwargs)``, as ``Workflow.add``. They join the
        workflow when this step succeeds (with its outcome, in one transaction): they
        run after it, and the steps after it wait for them too. A run that fails adds
        nothing (its retry adds them again). ``InvalidWorkflow`` outside a workflow's
        step, and in a cpu_bound step (its run is in another process)."""
        run = self._workflow
        if run is None or run.in_pool:
            from .exceptions import InvalidWorkflow

            raise InvalidWorkflow(
                f"job {self.id} cannot add steps: it is not a workflow's step"
                if run is None
                else f"step {run.step!r} is cpu_bound and cannot add steps (it runs in a "
                "pool process)"
            )
        if run.fan_out is None:
            from .workflows.fanout import FanOut

            run.fan_out = FanOut(run.step)
        return run.fan_out

    @property
    def added_steps(self) -> FanOut | None:
        """The run's fan-out if it added any steps (the worker's read), else None."""
        run = self._workflow
        if run is None or run.fan_out is None or not len(run.fan_out):
            return None
        return run.fan_out

    def _decoded(self) -> dict[str, Any]:
        meta = self._meta
        if meta is None:
            text, self._meta_json = self._meta_json, None
            decoded = json.loads(text) if text else None
            meta = self._meta = decoded if isinstance(decoded, dict) else {}
        return meta

    @property
    def meta(self) -> Mapping[str, Any]:
        """The job's meta (read-only; change it with ``update_meta``)."""
        return MappingProxyType(self._decoded())

    def update_meta(self, values: Mapping[str, Any] | None = None, /, **more: Any) -> None:
        """Add to (or overwrite keys of) the job's meta; saved with the run's outcome.
        The whole meta must stay a JSON object within the meta size limit (else
        ``PayloadError``, and nothing changes)."""
        merged = {**self._decoded(), **(values or {}), **more}
        encode_meta(merged, what=f"meta of job {self.id}")
        self._meta = merged
        self._changed = True

    @property
    def changed_meta_json(self) -> str | None:
        """The whole meta as JSON if the run changed it, else ``None``."""
        if not self._changed:
            return None
        return encode_meta(self._decoded()) or "{}"

    @property
    def meta_json(self) -> str | None:
        return encode_meta(self._decoded())

    def absorb(self, meta_json: str) -> None:
        """Take the meta a run elsewhere (a CPU pool process) ended with."""
        meta = json.loads(meta_json)
        if isinstance(meta, dict):
            self._meta, self._changed = meta, True

    def to_json(self) -> str:
        """The fields a CPU pool process needs to rebuild this context (``from_text``)."""
        return json.dumps(
            {
                "id": str(self.id),
                "actor": self.actor,
                "queue": self.queue,
                "attempt": self.attempt,
                "crash_count": self.crash_count,
                "cancel_requested": self.cancel_requested,
                "meta": self._decoded(),
                "workflow": None
                if self._workflow is None
                else [
                    str(self._workflow.workflow_id),
                    self._workflow.step,
                    dict(self._workflow.upstream),
                ],
            }
        )

    @classmethod
    def from_text(cls, text: str) -> JobContext:
        d = json.loads(text)
        ctx = cls(
            UUID(d["id"]),
            actor=d["actor"],
            queue=d["queue"],
            attempt=d["attempt"],
            crash_count=d["crash_count"],
            meta=d["meta"],
            cancel_requested=d["cancel_requested"],
        )
        if d.get("workflow"):
            workflow_id, step, upstream = d["workflow"]
            ctx.join_workflow(StepRun(UUID(workflow_id), step, upstream, in_pool=True))
        return ctx

    def log_fields(self) -> dict[str, Any]:
        return {
            "job": str(self.id),
            "actor": self.actor,
            "attempt": self.attempt,
            "queue": self.queue,
        }

    def __repr__(self) -> str:
        return f"JobContext(id={self.id}, actor={self.actor!r}, attempt={self.attempt})"


_current: ContextVar[JobContext | None] = ContextVar("taskq_current_job", default=None)


def current_job() -> JobContext:
    """The job this code runs in; ``NoCurrentJob`` outside a running job."""
    ctx = _current.get()
    if ctx is None:
        raise NoCurrentJob()
    return ctx


def peek() -> JobContext | None:
    """The job of this context, or ``None`` (taskq's own code, which may run outside one)."""
    return _current.get()


class running:  # lower-case: used as a function, ``with running(ctx):``
    """``current_job()`` is ``ctx`` (and log records carry its fields) inside the block.

    A class, not a generator: entered once per job on the worker's hot path."""

    __slots__ = ("_ctx", "_job_token", "_token")

    def __init__(self, ctx: JobContext) -> None:
        self._ctx = ctx

    def __enter__(self) -> JobContext:
        ctx = self._ctx
        self._token = _current.set(ctx)
        self._job_token = set_job_fields(ctx)  # its fields are worked out only if logged
        return ctx

    def __exit__(self, *exc: object) -> None:
        reset_job_fields(self._job_token)
        _current.reset(self._token)
