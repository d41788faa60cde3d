"""Unique jobs: the ``Unique`` option and how a job's unique key is worked out.

A job with a unique key is inserted only if no job holding the same key is in one of
the covered states (default: queued or running); otherwise enqueue returns the id of
the job that holds it, marked ``duplicate``. The store enforces this with a unique
partial index and ``ON CONFLICT DO NOTHING``, so concurrent producers cannot both win.

Keys are global (across actors and queues). A key derived from the arguments starts
with the actor's name; an explicit key is used as given. With a ``period`` the key gets
the number of the period it falls in (``key@<n>``, n = unix time // period), so one job
per key per period: cover ``succeeded`` too to keep a finished job blocking its period.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .exceptions import ConfigError
from .jobs import JobState

#: the states a unique key always covers (moving between them must never collide)
BASE_STATES: tuple[str, ...] = (JobState.QUEUED.value, JobState.RUNNING.value)
MAX_KEY_CHARS = 500

KeySource = str | Callable[..., str] | None


@dataclass(frozen=True, slots=True)
class Unique:
    """How an actor's jobs are unique.

    * ``key``: ``None`` derives the key from the actor's name and arguments; a string is
      the key of every job of the actor; a callable gets the job's arguments and
      returns the key (``key=lambda user_id, **_: f"sync-user:{user_id}"``).
    * ``states``: the states in which a job holds its key; always include ``queued``
      and ``running``; add ``succeeded``, ``dead`` or ``cancelled`` to keep finished
      jobs blocking.
    * ``period``: seconds; the key holds for one period of the clock at a time.
    """

    key: KeySource = None
    states: Sequence[str] = BASE_STATES
    period: float | None = None

    def __post_init__(self) -> None:
        if self.key is not None and not isinstance(self.key, str) and not callable(self.key):
            raise ConfigError(f"unique key must be a string or a callable, got {self.key!r}")
        if isinstance(self.key, str):
            check_key(self.key)
        states = tuple(self.states) if not isinstance(self.states, str) else (self.states,)
        unknown = [s for s in states if s not in JobState.__members__.values()]
        if unknown:
            raise ConfigError(
                f"unique states: unknown state {unknown[0]!r}; expected some of "
                f"{', '.join(s.value for s in JobState)}"
            )
        missing = [s for s in BASE_STATES if s not in states]
        if missing:
            raise ConfigError(
                f"unique states must include queued and running (missing {', '.join(missing)})"
            )
        ordered = tuple(s.value for s in JobState if s.value in states)
        object.__setattr__(self, "states", ordered)
        if self.period is not None and (
            isinstance(self.period, bool)
            or not isinstance(self.period, int | float)
            or not 0 < self.period < float("inf")
        ):
            raise ConfigError(
                f"unique period must be a positive number of seconds, not {self.period!r}"
            )

    @property
    def states_text(self) -> str:
        """The stored form of ``states``: ``,queued,running,``."""
        return "," + ",".join(self.states) + ","

    def key_for(
        self,
        actor: str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any],
        *,
        key: str | None = None,
        now: float | None = None,
    ) -> str:
        """The key of one job: ``key`` if given, else from this option."""
        if key is None:
            if self.key is None:
                key = derived_key(actor, args, kwargs)
            elif isinstance(self.key, str):
                key = self.key
            else:
                key = self.key(*args, **kwargs)
                if not isinstance(key, str):
                    raise ConfigError(
                        f"the unique key function of {actor!r} returned {type(key).__name__}, "
                        "not a string"
                    )
        if self.period is not None:
            key = f"{key}@{int((time.time() if now is None else now) // self.period)}"
        return check_key(key)


def derived_key(actor: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """``actor:<sha256 of the arguments>``; keyword order does not matter."""
    import hashlib  # here: a worker, which derives no keys, never loads OpenSSL's hashes

    try:
        text = json.dumps([list(args), dict(kwargs)], sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"cannot derive a unique key for {actor!r}: {exc}") from None
    return f"{actor}:{hashlib.sha256(text.encode()).hexdigest()}"


def check_key(key: str) -> str:
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_CHARS:
        raise ConfigError(
            f"a unique key must be a non-empty string of at most {MAX_KEY_CHARS} characters, "
            f"got {key!r:.80}"
        )
    return key


def as_unique(value: bool | Unique | None) -> Unique | None:
    """The actor option: ``True`` means unique by arguments; ``False``/``None``: not unique."""
    if value is None or value is False:
        return None
    if value is True:
        return Unique()
    if isinstance(value, Unique):
        return value
    raise ConfigError(f"unique must be True, False or a taskq.Unique, got {value!r}")
