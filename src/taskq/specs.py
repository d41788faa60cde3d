"""Actor + arguments + options -> the rows of one enqueue call: the I/O-free builder.

``JobBuilder`` checks and works out, once per call, what every job of an enqueue shares
(``template``: the actor's options or its recorded configuration, queue, delay or
run_at, priority, unique option, meta, tags), then checks each job's arguments against
an ``Actor``'s signature (``taskq.arguments``) and encodes them, and returns the call's
``ActorPlan`` (``one``, ``many``). The ``Enqueuer`` (both clients') uses it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from .arguments import check_arguments, positional_fit
from .exceptions import ActorNotFound, ConfigError
from .ids import uuid7_int, uuid7_ints
from .jobs import ActorConfig, JobColumns, JobSpec, new_job_ids
from .payload import check_tags, encode_arguments, encode_meta, fast_dumps
from .plan import NO_OPTIONS, ActorPlan, EnqueueOptions
from .registry import (
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_MAX_CRASHES,
    DEFAULT_QUEUE,
    Actor,
    ActorRef,
    check_actor_options,
)
from .unique import Unique
from .validation import check_int, check_text

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


class JobBuilder:
    """Actor + arguments + options -> ``ActorPlan``. No I/O.

    Everything that is the same for a batch (the actor's options, validation of the
    queue, delay and priority) is worked out once, in ``template``; then each job's
    arguments are checked and encoded."""

    def __init__(self, max_payload_bytes: int) -> None:
        self.max_payload_bytes = max_payload_bytes
        # id(actor) -> (actor, its options, its template with no options of the call's)
        self._plain: dict[int, tuple[object, tuple[Any, ...], Template]] = {}

    def template(
        self, actor: ActorRef, options: EnqueueOptions, known: Mapping[str, ActorConfig]
    ) -> Template:
        """What every job of the call shares. ``known``: the stored actor configurations
        (for an actor given by name)."""
        kept = None  # the actor's own options, when the call adds none: its template is kept
        if isinstance(actor, Actor) and (options is NO_OPTIONS or options.is_default):
            kept = (
                actor.name,
                actor.queue,
                actor.max_attempts,
                actor.max_crashes,
                actor.idempotent,
                actor.priority,
                actor.unique,
            )
            found = self._plain.get(id(actor))
            if found is not None and found[0] is actor and found[1] == kept:
                return found[2]
        made = self._template(actor, options, known)
        if kept is not None:
            self._plain[id(actor)] = (actor, kept, made)
        return made

    def _template(
        self, actor: ActorRef, options: EnqueueOptions, known: Mapping[str, ActorConfig]
    ) -> Template:
        queue, delay, run_at, priority = (
            options.queue,
            options.delay,
            options.run_at,
            options.priority,
        )
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
            recorded = cfg.extra.get("priority") if cfg else None  # the latest code's default
            default_priority = recorded if isinstance(recorded, int) else 0
        else:
            raise ConfigError(
                f"actor must be a taskq Actor or an actor name, got {type(actor).__name__}"
            )
        chosen_queue = queue or cfg_queue
        check_actor_options(name, chosen_queue, max_attempts, None, max_crashes)
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
        key = options.unique_key
        if key is not None and not isinstance(key, str | Unique):
            raise ConfigError(
                f"unique_key must be a string or a taskq.Unique, got {type(key).__name__}"
            )
        return Template(
            actor=name,
            queue=chosen_queue,
            priority=default_priority if priority is None else priority,
            run_at=run_at,
            max_attempts=max_attempts,
            max_crashes=max_crashes,
            idempotent=idempotent,
            unique=(key if isinstance(key, Unique) else None) or actor_unique,
            meta_json=encode_meta(options.meta, what=f"meta of {name!r}"),
            tags=check_tags(options.tags),
        )

    def spec(
        self,
        t: Template,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        job_id: UUID,
        unique_key: str | None = None,
    ) -> JobSpec:
        """One job of template ``t`` as a ``JobSpec`` (a workflow's step: the rows of
        several actors go in one transaction). ``unique_key`` names its key; else the
        template's ``unique`` option (if any) works it out. The arguments are not
        checked against a signature here (``Workflow.add`` did)."""
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
        self,
        actor: ActorRef,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        options: EnqueueOptions,
        known: Mapping[str, ActorConfig],
    ) -> ActorPlan:
        """The plan of one job (``enqueue``, ``enqueue_with``)."""
        t = self.template(actor, options, known)
        kwargs = kwargs or {}
        encoded = None
        if not kwargs and type(args) in _ARGS_TYPES:
            encoded = fast_dumps(args) if args else "[]"
        if encoded is not None and len(encoded) * 4 + 8 <= self.max_payload_bytes:
            kwargs_encoded = "{}"
        else:
            encoded, kwargs_encoded = encode_arguments(
                args, kwargs, actor=t.actor, max_bytes=self.max_payload_bytes
            )
        if isinstance(actor, Actor):  # after the payload's checks: JSON-shaped arguments
            check_arguments(actor, args, kwargs)
        rows = _columns(t, new_job_ids([uuid7_int()]), [encoded], [kwargs_encoded])
        key = options.unique_key if isinstance(options.unique_key, str) else None
        if key is None and t.unique is None:
            return ActorPlan(rows, options)
        if key is not None:
            check_text(key, "a unique key")
        unique = t.unique or _DEFAULT_UNIQUE
        return ActorPlan(
            rows, options, [unique.key_for(t.actor, args, kwargs, key=key)], unique.states_text
        )

    def many(
        self,
        actor: ActorRef,
        items: Iterable[Item | Sequence[Any]],
        options: EnqueueOptions,
        known: Mapping[str, ActorConfig],
        unique_keys: Sequence[str | None] | None = None,
    ) -> ActorPlan:
        """The plan of many jobs of one actor (``enqueue_many``). Each item is ``(args,
        kwargs)``; a bare list/tuple that is not such a pair is taken as positional
        args. ``unique_keys``: one key (or ``None``) per item."""
        t = self.template(actor, options, known)
        items = items if isinstance(items, list) else list(items)
        if unique_keys is not None and (
            isinstance(unique_keys, str) or len(unique_keys) != len(items)
        ):
            raise ConfigError("unique_keys must be a list with one key (or None) per item")
        args_json, kwargs_json = self._arguments(t, actor, items)
        rows = _columns(t, new_job_ids(uuid7_ints(len(items))), args_json, kwargs_json)
        if unique_keys is None and t.unique is None:
            return ActorPlan(rows, options)
        unique = t.unique or _DEFAULT_UNIQUE
        keys: list[str | None] = []
        for i, item in enumerate(items):
            key = None if unique_keys is None else unique_keys[i]
            if key is None and t.unique is None:
                keys.append(None)
                continue
            if key is not None:
                check_text(key, "a unique key")
            args, kwargs = _item_arguments(item)
            keys.append(unique.key_for(t.actor, args, kwargs, key=key))
        return ActorPlan(rows, options, keys, unique.states_text)

    def _arguments(
        self, t: Template, actor: ActorRef, items: Sequence[Item | Sequence[Any]]
    ) -> tuple[list[str], list[str]]:
        """Each item's arguments checked (an ``Actor``'s signature) and encoded: the
        common shape, (list or tuple, empty dict), here; the rest (and whatever fails
        here) by ``encode_arguments``, which has the checks and errors."""
        max_bytes = self.max_payload_bytes
        checked = actor if isinstance(actor, Actor) else None
        # positional-only items within these counts fit the actor without a call; any
        # other item takes the slow path, where check_arguments says what is wrong
        low, high = positional_fit(checked) if checked is not None else (0, math.inf)
        args_json: list[str] = []
        kwargs_json: list[str] = []
        add_args, add_kwargs = args_json.append, kwargs_json.append
        # the loop's names as locals, and the size a JSON text of this many characters
        # surely fits in (UTF-8 is at most 4 bytes a character; 8 for "{}" and slack)
        dumps, size, arg_types, room = fast_dumps, len, _ARGS_TYPES, (max_bytes - 8) // 4
        for item in items:
            if (
                type(item) is tuple
                and size(item) == 2
                and type(item[1]) is dict
                and not item[1]
                and type(args := item[0]) in arg_types
                and low <= size(args) <= high
            ):
                encoded = dumps(args) if args else "[]"
                if encoded is not None and size(encoded) <= room:
                    add_args(encoded)
                    add_kwargs("{}")
                    continue
            args, kwargs = _item_arguments(item)
            encoded, kwargs_encoded = encode_arguments(
                args, kwargs, actor=t.actor, max_bytes=max_bytes
            )
            if checked is not None:  # after the payload's checks: JSON-shaped arguments
                check_arguments(checked, args, kwargs)
            add_args(encoded)
            add_kwargs(kwargs_encoded)
        return args_json, kwargs_json


def _columns(
    t: Template, ids: Sequence[UUID], args_json: Sequence[str], kwargs_json: Sequence[str]
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
