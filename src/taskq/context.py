"""The job running in this context: ``taskq.current_job()``.

The worker sets a ``JobContext`` around every run, wherever the actor runs: awaited on
the event loop (async actors), in a thread (sync actors: the thread runs in a copy of
the consumer's context), or in a CPU pool process (the context's fields travel with the
job and the meta changes come back with the result). The same ``running`` block also
stamps the job's fields on every log record emitted during the run (``logs``).

An actor reads ``id``, ``actor``, ``queue``, ``attempt``, ``crash_count``, ``meta`` and
``cancel_requested``, and adds to ``meta`` while it runs (``update_meta(progress=0.5)``);
the worker saves the new meta with the run's outcome.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any
from uuid import UUID

from .exceptions import NoCurrentJob
from .logs import reset_job_fields, set_job_fields
from .payload import encode_meta


class JobContext:
    """The running job as its actor sees it."""

    __slots__ = (
        "_changed",
        "_meta",
        "_meta_json",
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
            }
        )

    @classmethod
    def from_text(cls, text: str) -> JobContext:
        d = json.loads(text)
        return cls(
            UUID(d["id"]),
            actor=d["actor"],
            queue=d["queue"],
            attempt=d["attempt"],
            crash_count=d["crash_count"],
            meta=d["meta"],
            cancel_requested=d["cancel_requested"],
        )

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
