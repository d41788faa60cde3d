"""The data a job carries, as every part of taskq sees it.

Plain frozen dataclasses, no I/O: the stores build them from rows, the clients hand
them to users, the worker turns them into outcomes. The two made once a job on the
worker's hot path (``ClaimedJob``, ``Outcome``) are ``hot_record``s: frozen to the type
checkers, not at run time (below).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar, dataclass_transform
from uuid import UUID, SafeUUID

from .exceptions import ConfigError
from .validation import INT_MAX

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True)
def hot_record(cls: type[_T]) -> type[_T]:
    """A frozen, slotted dataclass whose instances cost what a mutable one costs to make.

    A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``:
    for ``ClaimedJob`` (16 fields) 2.1 us against 0.6 us, for ``Outcome`` 1.0 us against
    0.2 us, about a tenth of the worker's CPU a no-op job (docs/benchmarks.md). Type
    checkers (mypy, pyright) treat the class as frozen and refuse an assignment to a field;
    at run time it is the mutable dataclass, hashed by its fields as the frozen one is."""
    return dataclass(slots=True, unsafe_hash=True)(cls)


class JobState(enum.StrEnum):
    QUEUED = "queued"  # includes delayed and waiting-to-retry
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    DEAD = "dead"
    CANCELLED = "cancelled"


ALL_STATES: tuple[str, ...] = tuple(s.value for s in JobState)


class DeadReason(enum.StrEnum):
    FAILED = "failed"  # attempts exhausted by exceptions (or timeouts)
    POISON = "poison"  # crashed max_crashes runners
    CRASHED = "crashed"  # runner died during a non-idempotent job
    UNKNOWN_ACTOR = "unknown_actor"  # no worker registry knows this actor
    UNDECODABLE = "undecodable"  # the payload could not be decoded for the runner
    SNOOZED_TOO_OFTEN = "snoozed_too_often"  # snoozed more than the actor's max_snoozes
    UNSTORABLE_RESULT = "unstorable_result"  # a workflow step's result cannot reach its successors


@dataclass(frozen=True, slots=True)
class JobSpec:
    """A job to insert. Built by the client from an actor (or a name) and arguments."""

    id: UUID
    actor: str
    queue: str
    args_json: str  # JSON array
    kwargs_json: str  # JSON object
    priority: int = 0
    run_at: datetime | None = None  # None: now (the store's clock)
    max_attempts: int = 3
    max_crashes: int = 2
    idempotent: bool = False
    unique_key: str | None = None
    unique_states: str | None = None  # ",queued,running,...," (see unique.py)
    meta_json: str | None = None  # JSON object
    tags: tuple[str, ...] = ()


class OnFailure(enum.StrEnum):
    """What a workflow step does when a step before it fails (docs/workflows.md)."""

    CANCEL = "cancel"  # an upstream step that fails cancels this one (upstream_failed)
    RUN = "run"  # this step runs once every upstream step ended, whatever their end


@dataclass(frozen=True, slots=True)
class StepRow:
    """One workflow step to insert: its job and its place in the graph (the workflow's
    other plain data is in ``taskq.workflows.model``; this is here because an
    ``Outcome`` carries the steps a run added, and ``WorkflowRow`` because an enqueue
    plan, ``plan.WorkflowPlan``, carries the run)."""

    spec: JobSpec
    name: str
    upstream: tuple[UUID, ...]  # the steps it runs after
    downstream: tuple[UUID, ...]  # the steps that run after it
    on_failure: str = OnFailure.CANCEL


@dataclass(frozen=True, slots=True)
class WorkflowRow:
    """A workflow to insert, every step with it. ``meta_json``: the meta every step's
    job carries (what ``before_enqueue`` hooks add: a trace context, a request id)."""

    id: UUID
    name: str
    steps: Sequence[StepRow]
    meta_json: str | None = None


@dataclass(frozen=True, slots=True)
class JobColumns:
    """A batch of jobs of one actor that share everything but their id and arguments,
    as columns: what ``enqueue_many`` hands a store when no job carries a unique key
    (``Store.enqueue_columns``). Row ``i`` is ``ids[i]``, ``args_json[i]``,
    ``kwargs_json[i]`` and the shared fields; it is the row ``JobSpec`` would give."""

    ids: Sequence[UUID]
    args_json: Sequence[str]  # JSON arrays
    kwargs_json: Sequence[str]  # JSON objects
    actor: str
    queue: str
    priority: int = 0
    run_at: datetime | None = None  # None: now (the store's clock)
    max_attempts: int = 3
    max_crashes: int = 2
    idempotent: bool = False
    meta_json: str | None = None  # JSON object, on every job
    tags: tuple[str, ...] = ()  # on every job

    def __len__(self) -> int:
        return len(self.ids)

    def specs(self) -> list[JobSpec]:
        """The same jobs as ``JobSpec``s (for a path that inserts specs)."""
        return [
            JobSpec(
                job_id,
                self.actor,
                self.queue,
                args_json,
                kwargs_json,
                self.priority,
                self.run_at,
                self.max_attempts,
                self.max_crashes,
                self.idempotent,
                None,
                None,
                self.meta_json,
                self.tags,
            )
            for job_id, args_json, kwargs_json in zip(
                self.ids, self.args_json, self.kwargs_json, strict=True
            )
        ]


class JobId(UUID):
    """A job's id as ``enqueue`` returns it: a ``UUID`` that also says whether the
    enqueue was a duplicate (a job holding the same unique key already existed, and
    this is that job's id)."""

    __slots__ = ("duplicate",)
    duplicate: bool

    def __init__(self, value: UUID | str, *, duplicate: bool = False) -> None:
        if isinstance(value, UUID):  # no round trip through text (enqueue_many makes many)
            super().__init__(int=value.int)
        else:
            super().__init__(value)
        object.__setattr__(self, "duplicate", duplicate)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_job_id, (str(self), self.duplicate))

    def __repr__(self) -> str:
        return f"JobId({str(self)!r}, duplicate={self.duplicate})"


def _job_id(value: str, duplicate: bool) -> JobId:
    return JobId(value, duplicate=duplicate)


def new_job_ids(values: Sequence[int]) -> list[JobId]:
    """``JobId``s (not duplicates) from the 128-bit integers of their UUIDs, without
    ``UUID.__init__``'s checks: a batch enqueue makes a thousand at a time. The slots set
    are ``UUID``'s own (``int``, ``is_safe``), as ``UUID(int=...)`` sets them."""
    new, put, unknown = object.__new__, object.__setattr__, SafeUUID.unknown
    out = []
    for value in values:
        job_id = new(JobId)
        put(job_id, "int", value)
        put(job_id, "is_safe", unknown)
        put(job_id, "duplicate", False)
        out.append(job_id)
    return out


@dataclass(frozen=True, slots=True)
class Job:
    """A job as stored. ``attempts`` counts starts; a give-back un-counts one."""

    id: UUID
    actor: str
    queue: str
    args: list[Any]
    kwargs: dict[str, Any]
    priority: int
    state: str
    attempts: int
    max_attempts: int
    crash_count: int
    max_crashes: int
    idempotent: bool
    run_at: datetime
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    worker_id: UUID | None
    lease_expires_at: datetime | None
    last_error: str | None
    dead_reason: str | None
    result: Any = None  # the decoded JSON result of a succeeded job (None when dropped)
    snooze_count: int = 0  # times the job snoozed (no attempt charged for those)
    cancelled_at: datetime | None = None  # when a cancel was asked for
    cancelled_by: str | None = None  # who asked
    meta: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    unique_key: str | None = None
    late: bool = False  # the outcome arrived after the crash rules had ended its run
    blamed_crashes: int = 0  # deaths whose cause pointed at the job (taskq.blame)
    unproven_crashes: int = 0  # deaths that blamed no job, or were shared with others
    workflow_id: UUID | None = None  # the workflow this job is a step of (docs/workflows.md)
    step: str | None = None  # its step name in that workflow

    @property
    def cancel_requested(self) -> bool:
        """A cancel was asked for while the job runs: its run will end ``cancelled``."""
        return self.cancelled_at is not None and self.state == JobState.RUNNING

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form used by ``--json`` output."""
        return plain_fields(self)


def plain_fields(obj: Any) -> dict[str, Any]:
    """A dataclass's fields, JSON-ready: datetimes in ISO form, UUIDs as text."""
    out: dict[str, Any] = {}
    for name in obj.__dataclass_fields__:
        value = getattr(obj, name)
        if isinstance(value, datetime):
            value = value.isoformat()
        elif isinstance(value, UUID):
            value = str(value)
        out[name] = value
    return out


@hot_record
class ClaimedJob:
    """What a claim hands the worker: enough to run the job and fence every write."""

    id: UUID
    actor: str
    queue: str
    args_json: str
    kwargs_json: str
    attempt: int  # this run's attempt number (1 on the first run)
    max_attempts: int
    crash_count: int
    max_crashes: int
    idempotent: bool
    snooze_count: int = 0
    meta_json: str | None = None  # the job's meta at claim (JSON object), None if none
    run_alone: bool = False  # blamed for a death it shared: run it with nothing else
    workflow_id: UUID | None = None  # a workflow's step (docs/workflows.md), else None
    step: str | None = None  # the step's name
    #: how many steps it runs after (the store reads their results by this job's id)
    upstream_steps: int = 0


@dataclass(frozen=True, slots=True)
class Claim:
    """What one ``Store.claim`` took: its runs, in claim order (priority, run_at, id), and
    the limits it found full, as waits by (kind, name) (``taskq_limit_waits_total``).
    Iterates and counts as its ``jobs``."""

    jobs: list[ClaimedJob]
    limit_waits: dict[tuple[str, str], int] = field(default_factory=dict)

    def __iter__(self) -> Iterator[ClaimedJob]:
        return iter(self.jobs)

    def __len__(self) -> int:
        return len(self.jobs)


class OutcomeKind(enum.StrEnum):
    SUCCEEDED = "succeeded"
    RETRY = "retry"  # back to queued after ``retry_delay`` seconds
    DEAD = "dead"  # with ``dead_reason``
    CRASHED = "crashed"  # the runner died: store applies the crash rules (requeue/crashed/poison)
    CANCELLED = "cancelled"
    SNOOZED = "snoozed"  # back to queued after ``retry_delay`` seconds, attempt not charged


@hot_record
class Outcome:
    """The end of one run. Fenced by (job_id, attempt, worker_id) when written."""

    job_id: UUID
    attempt: int
    kind: OutcomeKind
    result_json: str | None = None
    error: str | None = None
    retry_delay: float = 0.0  # retry and snoozed: seconds until the job is due again
    dead_reason: str | None = None
    meta_json: str | None = None  # the job's whole meta when the run changed it, else None
    blamed: bool = False  # crashed: the death points at this job (taskq.blame)
    added: tuple[StepRow, ...] = ()  # succeeded: steps the run added to its workflow


@hot_record
class NotedOutcome(Outcome):
    """An outcome with a line to log once it is written (``worker.outcomes.announce``):
    retries, deaths, dropped results. A field of its own class, so that the plain
    successes of the hot path build no more than they did."""

    note: tuple[Any, dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class RescuedJob:
    """A job taken back from a dead runner, and what the crash rules did with it."""

    id: UUID
    actor: str
    state: str  # queued | dead
    dead_reason: str | None
    crash_count: int
    queue: str = ""


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """The row a worker registers, and what ``taskq workers`` lists."""

    id: UUID
    pid: int
    hostname: str
    queues: list[str]
    worker_label: str | None = None
    workgroup_instance: UUID | None = None
    started_at: datetime | None = None
    last_seen_at: datetime | None = None
    #: Postgres: the most it may open (``--max-connections``), and how many it held open
    #: at its last heartbeat (None on SQLite, and in rows from before migration 0009)
    max_connections: int | None = None
    connections: int | None = None

    def status(self, now: datetime, stale_after: float) -> tuple[str, float | None]:
        """``("alive" | "stale", seconds since it was last seen)``: stale when not seen
        for longer than ``stale_after`` (its process is gone or cut off). The one rule of
        ``taskq workers`` and the dashboard's workers page."""
        if self.last_seen_at is None:
            return "stale", None
        ago = max((now - self.last_seen_at).total_seconds(), 0.0)
        return ("alive" if ago <= stale_after else "stale"), round(ago, 1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": str(self.id),
            "worker_label": self.worker_label,
            "workgroup_instance": str(self.workgroup_instance) if self.workgroup_instance else None,
            "pid": self.pid,
            "hostname": self.hostname,
            "queues": list(self.queues),
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "last_seen_at": self.last_seen_at.isoformat() if self.last_seen_at else None,
            "max_connections": self.max_connections,
            "connections": self.connections,
        }


@dataclass(frozen=True, slots=True)
class ActorConfig:
    """An actor's options as recorded in the store (drift detection, enqueue by name)."""

    name: str
    queue: str
    max_attempts: int
    max_crashes: int
    idempotent: bool
    cpu_bound: bool
    timeout: float | None
    extra: dict[str, Any] = field(default_factory=dict)

    def comparable(self) -> dict[str, Any]:
        return {
            "queue": self.queue,
            "max_attempts": self.max_attempts,
            "max_crashes": self.max_crashes,
            "idempotent": self.idempotent,
            "cpu_bound": self.cpu_bound,
            "timeout": self.timeout,
        }


class CancelResult(enum.StrEnum):
    """What ``cancel`` did to one job."""

    CANCELLED = "cancelled"  # it was queued: cancelled now
    REQUESTED = "requested"  # it is running: its worker stops it and records it cancelled
    ALREADY_REQUESTED = "already_requested"  # running, and a cancel was already asked for
    FINISHED = "finished"  # succeeded, dead or cancelled already: nothing changed

    @classmethod
    def of(cls, state: str, moved: bool) -> CancelResult:
        """What a cancel did, from the job's state after it and whether it changed the row."""
        if moved:
            return cls.CANCELLED if state == JobState.CANCELLED else cls.REQUESTED
        if state in (JobState.RUNNING, JobState.QUEUED):
            return cls.ALREADY_REQUESTED
        return cls.FINISHED


_PERIODS = {"second": 1.0, "minute": 60.0, "hour": 3600.0}


@dataclass(frozen=True, slots=True)
class Rate:
    """At most ``count`` starts in any ``period`` seconds (``"N/second|minute|hour"``)."""

    count: int
    period: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``"N/second"``, ``"N/minute"`` or ``"N/hour"`` with N >= 1."""
        count, _, period = str(text).strip().partition("/")
        seconds = _PERIODS.get(period.strip().lower().removesuffix("s"))
        try:
            n = int(count)
        except ValueError:
            n = 0
        if seconds is None or not 1 <= n <= INT_MAX:
            raise ConfigError(
                f"invalid rate {text!r:.60}: expected N/second, N/minute or N/hour with N from "
                f"1 to {INT_MAX}"
            )
        return cls(n, seconds)

    def __str__(self) -> str:
        for name, seconds in _PERIODS.items():
            if self.period == seconds:
                return f"{self.count}/{name}"
        return f"{self.count}/{self.period:g}s"


@dataclass(frozen=True, slots=True)
class Limits:
    """A queue's or an actor's fleet-wide limits (``None``: no limit of that kind)."""

    concurrency: int | None = None
    rate: Rate | None = None

    def __bool__(self) -> bool:
        return self.concurrency is not None or self.rate is not None


@dataclass(frozen=True, slots=True)
class QueueInfo:
    """One queue as ``taskq queues`` shows it."""

    name: str
    depth: dict[str, int]  # state -> number of jobs (every state present)
    oldest_age_s: float | None  # how long the oldest due queued job has waited
    paused: bool = False
    paused_at: datetime | None = None
    paused_by: str | None = None
    limits: Limits = field(default_factory=Limits)

    @property
    def running(self) -> int:
        return self.depth.get(JobState.RUNNING, 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "depth": dict(self.depth),
            "oldest_age_s": self.oldest_age_s,
            "running": self.running,
            "paused": self.paused,
            "paused_at": self.paused_at.isoformat() if self.paused_at else None,
            "paused_by": self.paused_by,
            "concurrency_limit": self.limits.concurrency,
            "rate_limit": str(self.limits.rate) if self.limits.rate else None,
        }


@dataclass(frozen=True, slots=True)
class ScheduleInfo:
    """A periodic schedule as workers recorded it (``taskq schedules``)."""

    name: str
    actor: str
    cron: str
    timezone: str
    missed: str
    first_seen_at: datetime  # no tick before this is owed
    seen_at: datetime  # the last time a starting worker recorded it
    last_tick: datetime | None  # the latest tick enqueued or skipped

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            out[name] = value.isoformat() if isinstance(value, datetime) else value
        return out
