"""One enqueue call as values: its options (``EnqueueOptions``) and the rows it is about
to write (an ``EnqueuePlan``), what ``Middleware.before_enqueue`` sees. No I/O.

``enqueue_with`` and ``enqueue_many`` take their options as keywords (the public
signatures of docs/api.md); the clients turn them into one ``EnqueueOptions`` at once,
and everything after (``specs.JobBuilder``, the ``Enqueuer``, the hooks) passes that
one value. The builder returns an ``ActorPlan``: the jobs of one actor as columns
(``JobColumns``: ids, arguments, and what they share), with each job's unique key when
any job carries one. A plan without unique keys is written as columns
(``Store.enqueue_columns``, one statement or one COPY); one with keys as ``JobSpec``s
(``Store.enqueue``: insert, then find each duplicate's holder).

``enqueue_workflow``'s plan is a ``WorkflowPlan``: every step of the run (the
``WorkflowRow`` that ``workflows/plan.py`` builds), of several actors, one call for the
hooks (and one tracing span), written in one transaction.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast
from uuid import UUID

from .jobs import JobColumns, JobId, JobSpec, WorkflowRow
from .payload import encode_meta
from .unique import Unique


@dataclass(frozen=True, slots=True)
class EnqueueOptions:
    """The options of one enqueue call, as one value (the keywords of ``enqueue_with``
    and ``enqueue_many``; ``None`` or empty: the actor's own). ``unique_key`` is
    ``enqueue_with``'s (``enqueue_many`` gives one key per item instead)."""

    queue: str | None = None
    delay: float | None = None
    run_at: datetime | None = None
    priority: int | None = None
    unique_key: str | Unique | None = None
    meta: Mapping[str, Any] | None = None
    tags: Sequence[str] = ()

    @property
    def is_default(self) -> bool:
        """No option given: the actor's defaults."""
        return self == NO_OPTIONS


NO_OPTIONS = EnqueueOptions()


class EnqueuePlan(ABC):
    """The jobs one enqueue call is about to write: what ``before_enqueue`` and
    ``after_enqueue`` see. ``ActorPlan`` is the plan of ``enqueue``, ``enqueue_with`` and
    ``enqueue_many`` (jobs of one actor), ``WorkflowPlan`` that of ``enqueue_workflow``
    (every step of one run, of several actors).

    ``ids`` are the jobs' ids, and ``actors`` / ``queues`` each job's actor and queue
    (``actor`` / ``queue``: the one they share, or ``"*"``); ``meta`` is the meta every
    job of the call carries, and ``add_meta`` adds to it (a trace context, a request
    id). ``options`` are the call's options as given."""

    __slots__ = ("options",)

    options: EnqueueOptions

    @property
    @abstractmethod
    def actor(self) -> str:
        """The actor of every job, or ``"*"`` when they are not all one actor's."""

    @property
    @abstractmethod
    def queue(self) -> str:
        """The queue of every job, or ``"*"`` when they are not all on one."""

    @property
    @abstractmethod
    def ids(self) -> Sequence[UUID]:
        """The jobs' ids."""

    @property
    @abstractmethod
    def actors(self) -> Sequence[str]:
        """Each job's actor (``actors[i]`` is job ``ids[i]``'s)."""

    @property
    @abstractmethod
    def queues(self) -> Sequence[str]:
        """Each job's queue."""

    @abstractmethod
    def __len__(self) -> int: ...

    @property
    @abstractmethod
    def meta_json(self) -> str | None:
        """The meta every job carries, as written (JSON), or None."""

    @property
    @abstractmethod
    def _what(self) -> str:
        """Whose meta it is, in an error's words."""

    @abstractmethod
    def _set_meta_json(self, meta_json: str | None) -> None: ...

    @property
    def meta(self) -> dict[str, Any]:
        """The meta every job of the call carries (a copy: change it with ``add_meta``)."""
        meta_json = self.meta_json
        return json.loads(meta_json) if meta_json else {}

    def add_meta(self, key: str, value: Any) -> None:
        """Put ``key`` in every job's meta, unless the caller's meta already has it (the
        caller's word wins). The meta's limits apply (``taskq.payload.META_MAX_BYTES``)."""
        meta = self.meta
        if key in meta:
            return
        meta[key] = value
        self._set_meta_json(encode_meta(meta, what=f"meta of {self._what}"))


def _one(values: Sequence[str]) -> str:
    """The value every job shares, or ``"*"``."""
    first = values[0] if values else "*"
    return first if all(v == first for v in values) else "*"


class ActorPlan(EnqueuePlan):
    """The jobs of one actor that an ``enqueue``, ``enqueue_with`` or ``enqueue_many``
    call is about to write. The rows themselves (``rows``, ``unique_keys``) are what the
    store is handed."""

    __slots__ = ("rows", "unique_keys", "unique_states")

    def __init__(
        self,
        rows: JobColumns,
        options: EnqueueOptions = NO_OPTIONS,
        unique_keys: Sequence[str | None] | None = None,
        unique_states: str | None = None,
    ) -> None:
        self.rows = rows
        self.options = options
        #: one key (or None) per job, when any job of the call carries one
        self.unique_keys = unique_keys
        self.unique_states = unique_states  # of the jobs that carry a key

    @property
    def actor(self) -> str:
        return self.rows.actor

    @property
    def queue(self) -> str:
        return self.rows.queue

    @property
    def ids(self) -> Sequence[UUID]:
        """The jobs' ids (a duplicate of a unique key gets its holder's instead)."""
        return self.rows.ids

    @property
    def actors(self) -> Sequence[str]:
        return [self.rows.actor] * len(self.rows.ids)

    @property
    def queues(self) -> Sequence[str]:
        return [self.rows.queue] * len(self.rows.ids)

    def __len__(self) -> int:
        return len(self.rows.ids)

    @property
    def meta_json(self) -> str | None:
        return self.rows.meta_json

    @property
    def _what(self) -> str:
        return repr(self.rows.actor)

    def _set_meta_json(self, meta_json: str | None) -> None:
        self.rows = replace(self.rows, meta_json=meta_json)

    @property
    def is_plain(self) -> bool:
        """No job carries a unique key: written as columns."""
        return self.unique_keys is None

    def specs(self) -> list[JobSpec]:
        """The jobs as ``JobSpec``s, with their unique keys (the path that settles keys)."""
        r = self.rows
        keys = self.unique_keys or [None] * len(r.ids)
        states = self.unique_states
        return [
            JobSpec(
                job_id,
                r.actor,
                r.queue,
                args_json,
                kwargs_json,
                r.priority,
                r.run_at,
                r.max_attempts,
                r.max_crashes,
                r.idempotent,
                key,
                None if key is None else states,
                r.meta_json,
                r.tags,
            )
            for job_id, args_json, kwargs_json, key in zip(
                r.ids, r.args_json, r.kwargs_json, keys, strict=True
            )
        ]

    def job_ids(self, holders: Sequence[UUID] | None = None) -> list[JobId]:
        """What enqueue returns: the jobs' own ids, or with ``holders`` (the store's
        answer for a plan with unique keys) each key's holder, marked a duplicate when
        it is not the job's own."""
        ids = self.rows.ids
        if holders is None:
            if ids and type(ids[0]) is not JobId:  # not the builder's (its are JobIds)
                return [JobId(i) for i in ids]
            return cast("list[JobId]", ids if type(ids) is list else list(ids))
        return [JobId(h, duplicate=h != i) for i, h in zip(ids, holders, strict=True)]


class WorkflowPlan(EnqueuePlan):
    """Every step of one run of a workflow that ``enqueue_workflow`` is about to write
    (all or nothing): one job a step, in the order the steps were added, of their own
    actors and queues. ``workflow`` is the run's row (``workflow.id``, ``.name``, each
    step's ``.steps``); ``meta`` is on every step's job."""

    __slots__ = ("workflow",)

    def __init__(self, workflow: WorkflowRow) -> None:
        self.workflow = workflow
        self.options = NO_OPTIONS

    @property
    def workflow_id(self) -> UUID:
        return self.workflow.id

    @property
    def workflow_name(self) -> str:
        return self.workflow.name

    @property
    def actor(self) -> str:
        return _one(self.actors)

    @property
    def queue(self) -> str:
        return _one(self.queues)

    @property
    def ids(self) -> Sequence[UUID]:
        return [s.spec.id for s in self.workflow.steps]

    @property
    def actors(self) -> Sequence[str]:
        return [s.spec.actor for s in self.workflow.steps]

    @property
    def queues(self) -> Sequence[str]:
        return [s.spec.queue for s in self.workflow.steps]

    def __len__(self) -> int:
        return len(self.workflow.steps)

    @property
    def meta_json(self) -> str | None:
        return self.workflow.meta_json

    @property
    def _what(self) -> str:
        return f"workflow {self.workflow.name!r}"

    def _set_meta_json(self, meta_json: str | None) -> None:
        self.workflow = replace(self.workflow, meta_json=meta_json)
