"""The messages between the pool and one of its processes, over one ``multiprocessing`` Pipe.

Every message is a dataclass of strings and ints: payloads and results stay JSON
text end to end, the user's objects are never pickled. Both ends read them with
``match``. ::

    child  -> parent  Ready(pid, memory_limit_mib)        initializers done
    child  -> parent  InitFailed(traceback)               an initializer raised; exit 70
    parent -> child   Run(seq, actor, args_json, kwargs_json, max_result_bytes, log_fields,
                          context_json)                   context: ``taskq.current_job()``
    child  -> parent  Started(seq, memory_limit_mib)      the job was received
    child  -> parent  Returned(seq, result_json, meta_json)       meta: if the job changed it
    child  -> parent  Raised(seq, error_type, message, traceback, meta_json)   the job raised
    child  -> parent  ResultNotSent(seq, reason, meta_json)   the job returned, but its result
                                                          cannot be sent (not JSON, too big)
    child  -> parent  Undecodable(seq, message)           the payload is not valid JSON

On the pipe a message is a plain tuple, its type's index in ``WIRE`` first and then its
fields in order (``to_wire`` / ``from_wire``), pickled and written as one of
``multiprocessing``'s frames by ``send`` (``recv`` unpickles it): a tuple
of strings and ints pickles and unpickles several times faster than the dataclass (whose
pickle names its class and restores its slots one by one in Python), and the event
loop unpickles every reply. ``send`` pickles with ``pickle.dumps``, not through
``Connection.send``, whose ``ForkingPickler`` copies the reducer table for each message
(2 us against 0.4 us a message, three messages a job). The messages are not frozen: a
frozen dataclass sets each field through ``object.__setattr__`` (0.85 us against
0.15 us a message); nothing changes one after it is built.

``seq`` numbers the jobs a pool sends; a reply whose ``seq`` is not the one of the job
in flight is a protocol error (``Garbled``) and its process is replaced. The pool's own
thread adds the verdicts no child sends: ``Died`` (the process ended without a reply)
and ``TimedOut`` (the job's timeout passed). A closed pipe tells an idle child to exit.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import dataclass, fields
from multiprocessing.connection import Connection
from operator import attrgetter
from typing import Any


@dataclass(slots=True)
class Ready:
    pid: int
    memory_limit_mib: int


@dataclass(slots=True)
class InitFailed:
    traceback: str


@dataclass(slots=True)
class Run:
    seq: int
    actor: str
    args_json: str
    kwargs_json: str
    max_result_bytes: int
    #: the job's log fields (job, actor, attempt, queue): the child stamps its records
    #: (with ``context_json`` it takes them from the context, and none are sent)
    log_fields: tuple[tuple[str, str | int], ...] = ()
    #: the job's ``taskq.current_job()`` fields as JSON (``JobContext.to_json``), if any
    context_json: str | None = None


@dataclass(slots=True)
class Started:
    seq: int
    memory_limit_mib: int


@dataclass(slots=True)
class Returned:
    seq: int
    result_json: str
    meta_json: str | None = None  # the job's whole meta, if the run changed it


@dataclass(slots=True)
class Raised:
    seq: int
    error_type: str
    message: str
    traceback: str
    meta_json: str | None = None  # the job's whole meta, if the run changed it


@dataclass(slots=True)
class ResultNotSent:
    seq: int
    reason: str
    meta_json: str | None = None  # the job's whole meta, if the run changed it


@dataclass(slots=True)
class Undecodable:
    seq: int
    message: str


# -- verdicts the parent side adds ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Died:
    """The process ended (or its pipe broke) before it replied."""


@dataclass(frozen=True, slots=True)
class TimedOut:
    """No reply within the timeout (of the job, or of the initializers)."""


@dataclass(frozen=True, slots=True)
class Garbled:
    """A message the protocol does not allow here (wrong type, or a stale ``seq``)."""

    detail: str


JobReply = Returned | Raised | ResultNotSent | Undecodable
Verdict = JobReply | Died | TimedOut | Garbled
StartReply = Ready | InitFailed | Died | TimedOut | Garbled


@dataclass(slots=True)
class Exchanged:
    """How one job's exchange ended: the verdict, and the child's ``Started`` if it came."""

    verdict: Verdict
    started: Started | None


Message = Ready | InitFailed | Run | Started | JobReply

#: the messages that cross the pipe; a message's index here is its tag on the wire
WIRE: tuple[type[Message], ...] = (
    Ready,
    InitFailed,
    Run,
    Started,
    Returned,
    Raised,
    ResultNotSent,
    Undecodable,
)
_TAGS = {kind: tag for tag, kind in enumerate(WIRE)}


def _getter(kind: type[Message]) -> Callable[[Message], tuple[Any, ...]]:
    """A message's fields as a tuple (attrgetter of one name returns the bare value)."""
    names = [f.name for f in fields(kind)]
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda message: (one(message),)
    return attrgetter(*names)


_FIELDS = {kind: _getter(kind) for kind in WIRE}


def to_wire(message: Message) -> tuple[Any, ...]:
    """``message`` as the tuple sent on the pipe: its tag, then its fields in order."""
    kind = type(message)
    return (_TAGS[kind], *_FIELDS[kind](message))


def from_wire(value: object) -> Message:
    """The message a tuple from the pipe stands for; ``ValueError`` if it is none."""
    if not isinstance(value, tuple) or not value or not isinstance(value[0], int):
        raise ValueError(f"not a message: {value!r}")
    tag = value[0]
    if not 0 <= tag < len(WIRE):
        raise ValueError(f"not a message: {value!r}")
    try:
        return WIRE[tag](*value[1:])
    except TypeError as exc:
        raise ValueError(f"not a {WIRE[tag].__name__}: {value!r}") from exc


def send(conn: Connection, message: Message) -> None:
    """Write ``message`` on the pipe as one frame (both ends; ``recv`` reads it)."""
    conn.send_bytes(pickle.dumps(to_wire(message), pickle.HIGHEST_PROTOCOL))
