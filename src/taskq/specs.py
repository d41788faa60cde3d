"""Actor + arguments + options -> ``JobSpec``: the I/O-free half of enqueue.

``JobBuilder`` checks and works out, once per call, what every job of an enqueue shares
(``template``: the actor's options or its recorded configuration, queue, delay or
run_at, priority, unique option, meta, tags), then encodes each job (``spec``, ``many``).
``AsyncClient`` and ``Client`` share it; ``job_ids`` turns the store's answer into
``JobId``s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from .exceptions import ActorNotFound, ConfigError
from .ids import uuid7_many
from .jobs import ActorConfig, JobColumns, JobId, JobSpec
from .payload import check_tags, encode_arguments, encode_meta, fast_dumps
from .registry import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_CRASHES,
    DEFAULT_QUEUE,
    Actor,
    AnyActor,
    _check_options,
)
from .unique import Unique
from .validation import check_int, check_text

ActorRef = AnyActor | str
Item = tuple[Sequence[Any], Mapping[str, Any]]
UniqueKey = str | Unique
_DEFAULT_UNIQUE = Unique()


def unknown_actor_message(name: str) -> str:
    """Why a job for an actor this store has never seen is refused, and the three fixes."""
    return (
        f"unknown actor {name!r}: no worker serving it has run against this store, so its "
        "queue and options are unknown (a job on the wrong queue would wait forever); "
        "pass the actor object instead of its name, run a worker that serves it once, "
        "or give its queue (queue= / --queue)"
    )


@dataclass(frozen=True, slots=True)
class Template:
    """What every job of one enqueue call shares: actor, queue, options, run_at."""

    actor: str
    queue: str
    priority: int
    run_at: datetime | None
    max_attempts: int
    max_crashes: int
    idempotent: bool
    unique: Unique | None  # the actor's option, or the call's
    meta_json: str | None
    tags: tuple[str, ...]


def job_ids(specs: Sequence[JobSpec], holders: Sequence[UUID]) -> list[JobId]:
    """The store's answer as ``JobId``s: a holder that is not the spec's own id means
    another job already held the key (a duplicate)."""
    return [
        JobId(holder, duplicate=holder != spec.id)
        for spec, holder in zip(specs, holders, strict=True)
    ]


class JobBuilder:
    """Actor + arguments + options -> ``JobSpec``. No I/O.

    Everything that is the same for a batch (the actor's options, validation of the
    queue, delay and priority) is worked out once, in ``template``; ``spec`` then only
    encodes one job's arguments."""

    def __init__(self, max_payload_bytes: int) -> None:
        self.max_payload_bytes = max_payload_bytes
        # id(actor) -> (actor, its options, its template with no options of the call's)
        self._plain: dict[int, tuple[object, tuple[Any, ...], Template]] = {}

    def template(
        self,
        actor: ActorRef,
        *,
        known: Mapping[str, ActorConfig],
        queue: str | None,
        delay: float | None,
        run_at: datetime | None,
        priority: int | None,
        unique: Unique | None = None,
        meta: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = (),
    ) -> Template:
        options = None  # the actor's own, when the call adds none: its template is kept
        if (
            isinstance(actor, Actor)
            and queue is None
            and delay is None
            and run_at is None
            and priority is None
            and unique is None
            and meta is None
            and not tags
        ):
            options = (
                actor.name,
                actor.queue,
                actor.max_attempts,
                actor.max_crashes,
                actor.idempotent,
                actor.priority,
                actor.unique,
            )
            found = self._plain.get(id(actor))
            if found is not None and found[0] is actor and found[1] == options:
                return found[2]
        made = self._template(
            actor,
            known=known,
            queue=queue,
            delay=delay,
            run_at=run_at,
            priority=priority,
            unique=unique,
            meta=meta,
            tags=tags,
        )
        if options is not None:
            self._plain[id(actor)] = (actor, options, made)
        return made

    def _template(
        self,
        actor: ActorRef,
        *,
        known: Mapping[str, ActorConfig],
        queue: str | None,
        delay: float | None,
        run_at: datetime | None,
        priority: int | None,
        unique: Unique | None,
        meta: Mapping[str, Any] | None,
        tags: Sequence[str] | None,
    ) -> Template:
        actor_unique: Unique | None = None
        if isinstance(actor, Actor):
            name, cfg_queue = actor.name, actor.queue
            max_attempts, max_crashes, idempotent = (
                actor.max_attempts,
                actor.max_crashes,
                actor.idempotent,
            )
            default_priority = actor.priority
            actor_unique = actor.unique
        elif isinstance(actor, str):
            name = actor
            cfg = known.get(name)
            if cfg is None and queue is None:
                raise ActorNotFound(unknown_actor_message(name))
            cfg_queue = cfg.queue if cfg else DEFAULT_QUEUE
            max_attempts = cfg.max_attempts if cfg else DEFAULT_MAX_ATTEMPTS
            max_crashes = cfg.max_crashes if cfg else DEFAULT_MAX_CRASHES
            idempotent = cfg.idempotent if cfg else False
            default_priority = 0
        else:
            raise ConfigError(
                f"actor must be a taskq Actor or an actor name, got {type(actor).__name__}"
            )
        chosen_queue = queue or cfg_queue
        _check_options(name, chosen_queue, max_attempts, None, max_crashes)
        if delay is not None and run_at is not None:
            raise ConfigError("give delay or run_at, not both")
        if delay is not None:
            if not isinstance(delay, int | float) or not 0 <= delay < math.inf:
                raise ConfigError(f"delay must be a number of seconds >= 0, got {delay!r}")
            try:
                run_at = datetime.now(UTC) + timedelta(seconds=delay)
            except OverflowError:
                raise ConfigError(
                    f"delay of {delay:g} seconds is too far in the future (past the year 9999)"
                ) from None
        elif run_at is not None and run_at.tzinfo is None:
            raise ConfigError("run_at must be timezone-aware")
        if priority is not None:
            check_int(priority, "priority")
        return Template(
            actor=name,
            queue=chosen_queue,
            priority=default_priority if priority is None else priority,
            run_at=run_at,
            max_attempts=max_attempts,
            max_crashes=max_crashes,
            idempotent=idempotent,
            unique=unique or actor_unique,
            meta_json=encode_meta(meta, what=f"meta of {name!r}"),
            tags=check_tags(tags),
        )

    def spec(
        self,
        t: Template,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        job_id: UUID,
        unique_key: str | None = None,
    ) -> JobSpec:
        """One job. ``unique_key`` names its key; else the template's ``unique`` option
        (if any) works it out."""
        args_json, kwargs_json = encode_arguments(
            args, kwargs, actor=t.actor, max_bytes=self.max_payload_bytes
        )
        key = states = None
        if unique_key is not None:
            check_text(unique_key, "a unique key")
        if unique_key is not None or t.unique is not None:
            unique = t.unique or _DEFAULT_UNIQUE
            key = unique.key_for(t.actor, args, kwargs, key=unique_key)
            states = unique.states_text
        return JobSpec(
            job_id,
            t.actor,
            t.queue,
            args_json,
            kwargs_json,
            t.priority,
            t.run_at,
            t.max_attempts,
            t.max_crashes,
            t.idempotent,
            key,
            states,
            t.meta_json,
            t.tags,
        )

    def one(
        self, t: Template, args: Sequence[Any], kwargs: Mapping[str, Any], job_id: UUID
    ) -> JobColumns:
        """One job of a template that carries no unique key, as columns (what ``spec``
        would encode, with the same checks and errors)."""
        encoded = None
        if not kwargs and type(args) in _ARGS_TYPES:
            encoded = fast_dumps(args) if args else "[]"
        if encoded is not None and len(encoded) * 4 + 8 <= self.max_payload_bytes:
            kwargs_encoded = "{}"
        else:
            encoded, kwargs_encoded = encode_arguments(
                args, kwargs, actor=t.actor, max_bytes=self.max_payload_bytes
            )
        return self._columns(t, [job_id], [encoded], [kwargs_encoded])

    def _columns(
        self, t: Template, ids: Sequence[UUID], args_json: list[str], kwargs_json: list[str]
    ) -> JobColumns:
        return JobColumns(
            ids,
            args_json,
            kwargs_json,
            t.actor,
            t.queue,
            t.priority,
            t.run_at,
            t.max_attempts,
            t.max_crashes,
            t.idempotent,
            t.meta_json,
            t.tags,
        )

    def columns(
        self, t: Template, items: Sequence[Item | Sequence[Any]], ids: Sequence[UUID]
    ) -> JobColumns:
        """Many jobs of one template that carry no unique key, as columns: the same
        arguments ``many`` would encode, the same checks and errors, without a
        ``JobSpec`` per job. One id per item."""
        max_bytes = self.max_payload_bytes
        args_json: list[str] = []
        kwargs_json: list[str] = []
        add_args, add_kwargs = args_json.append, kwargs_json.append
        for item in items:
            # the common shape, (list or tuple, empty dict), encoded here; the rest (and
            # whatever fails here) by encode_arguments, which has the checks and errors
            if (
                type(item) is tuple
                and len(item) == 2
                and type(item[1]) is dict
                and not item[1]
                and type(item[0]) in _ARGS_TYPES
            ):
                args = item[0]
                encoded = fast_dumps(args) if args else "[]"
                if encoded is not None and len(encoded) * 4 + 8 <= max_bytes:
                    add_args(encoded)
                    add_kwargs("{}")
                    continue
                kwargs: Mapping[str, Any] = item[1]
            else:
                args, kwargs = _item_arguments(item)
            encoded, kwargs_encoded = encode_arguments(
                args, kwargs, actor=t.actor, max_bytes=max_bytes
            )
            add_args(encoded)
            add_kwargs(kwargs_encoded)
        return self._columns(t, ids, args_json, kwargs_json)

    def many(
        self,
        t: Template,
        items: Iterable[Item | Sequence[Any]],
        unique_keys: Sequence[str | None] | None = None,
    ) -> list[JobSpec]:
        """Many jobs of one template. Each item is ``(args, kwargs)``; a bare list/tuple
        that is not such a pair is taken as positional args. ``unique_keys``: one key (or
        ``None``) per item."""
        items = list(items)
        if unique_keys is None:
            keys: Sequence[str | None] = [None] * len(items)
        elif isinstance(unique_keys, str) or len(unique_keys) != len(items):
            raise ConfigError("unique_keys must be a list with one key (or None) per item")
        else:
            keys = unique_keys
        specs = []
        for item, job_id, key in zip(items, uuid7_many(len(items)), keys, strict=True):
            args, kwargs = _item_arguments(item)
            specs.append(self.spec(t, args, kwargs, job_id, key))
        return specs


_ARGS_TYPES = (tuple, list)


def _item_arguments(item: Item | Sequence[Any]) -> tuple[Sequence[Any], Mapping[str, Any]]:
    """An ``enqueue_many`` item as (args, kwargs): an ``(args, kwargs)`` pair, or a bare
    list/tuple of positional args."""
    if (
        type(item) is tuple
        and len(item) == 2
        and isinstance(item[1], Mapping)
        and isinstance(item[0], list | tuple)
    ):
        return item[0], item[1]
    if isinstance(item, list | tuple):
        return item, {}
    raise ConfigError(f"enqueue_many items must be (args, kwargs) pairs, got {type(item).__name__}")
