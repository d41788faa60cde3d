"""One enqueue call as values: its options (``EnqueueOptions``) and the rows it is about
to write (``EnqueuePlan``), what ``Middleware.before_enqueue`` sees. No I/O.

``enqueue_with`` and ``enqueue_many`` take their options as keywords (the public
signatures of docs/api.md); the clients turn them into one ``EnqueueOptions`` at once,
and everything after (``specs.JobBuilder``, the ``Enqueuer``, the hooks) passes that
one value. The builder returns an ``EnqueuePlan``: the jobs of one actor as columns
(``JobColumns``: ids, arguments, and what they share), with each job's unique key when
any job carries one. A plan without unique keys is written as columns
(``Store.enqueue_columns``, one statement or one COPY); one with keys as ``JobSpec``s
(``Store.enqueue``: insert, then find each duplicate's holder).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, cast
from uuid import UUID

from .jobs import JobColumns, JobId, JobSpec
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


class EnqueuePlan:
    """The jobs one enqueue call is about to write (what ``before_enqueue`` sees).

    ``actor``, ``queue`` and ``ids`` say what is enqueued; ``meta`` is the meta every
    job of the call carries, and ``add_meta`` adds to it (a trace context, a request
    id). ``options`` are the call's options as given. The rows themselves (``rows``,
    ``unique_keys``) are what the store is handed."""

    __slots__ = ("options", "rows", "unique_keys", "unique_states")

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

    def __len__(self) -> int:
        return len(self.rows.ids)

    @property
    def meta(self) -> dict[str, Any]:
        """The meta every job of the call carries (a copy: change it with ``add_meta``)."""
        meta_json = self.rows.meta_json
        return json.loads(meta_json) if meta_json else {}

    def add_meta(self, key: str, value: Any) -> None:
        """Put ``key`` in every job's meta, unless the caller's meta already has it (the
        caller's word wins). The meta's limits apply (``taskq.payload.META_MAX_BYTES``)."""
        meta = self.meta
        if key in meta:
            return
        meta[key] = value
        meta_json = encode_meta(meta, what=f"meta of {self.actor!r}")
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
