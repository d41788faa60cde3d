"""What an operator's call takes, checked: a job or workflow id, limits, the actor a limit is for;
and who is acting (recorded on a pause or a cancel). Shared by the clients and the
``taskq`` commands."""

from __future__ import annotations

import getpass
import os
import socket
from uuid import UUID

from .exceptions import ConfigError, JobNotFound, TaskqError, WorkflowNotFound
from .jobs import Limits, Rate
from .registry import Actor, ActorRef
from .validation import check_int


def parse_job_id(job_id: UUID | str) -> UUID:
    return _parse_id(job_id, "job", JobNotFound)


def parse_workflow_id(workflow_id: UUID | str) -> UUID:
    return _parse_id(workflow_id, "workflow", WorkflowNotFound)


def _parse_id(value: UUID | str, what: str, missing: type[TaskqError]) -> UUID:
    """An id given as a UUID or its text; anything else is no such thing (``missing``)."""
    if isinstance(value, UUID):
        return value
    try:
        return UUID(str(value))
    except ValueError:
        raise missing(f"invalid {what} id {value!r}: expected a UUID") from None


def who() -> str:
    """``user@host``: recorded as who paused a queue or cancelled a job."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid{os.getuid()}"
    return f"{user}@{socket.gethostname()}"


def make_limits(concurrency: int | None, rate: Rate | str | None) -> Limits:
    """Check and build limits: ``concurrency`` an integer >= 1, ``rate`` "N/period"."""
    if concurrency is not None:
        check_int(concurrency, "concurrency", 1)
    if rate is not None and not isinstance(rate, Rate):
        rate = Rate.parse(rate)
    if rate is not None:
        check_int(rate.count, "a rate's count", 1)
    return Limits(concurrency=concurrency, rate=rate)


def actor_name(actor: ActorRef) -> str:
    if isinstance(actor, Actor):
        return actor.name
    if isinstance(actor, str) and actor:
        return actor
    raise ConfigError(f"actor must be a taskq Actor or an actor name, got {actor!r}")
