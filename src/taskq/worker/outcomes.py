"""How the end of a run becomes an ``Outcome``: success, retry, or dead with a reason.

* success -> ``succeeded`` with the result as JSON; a result that cannot be stored (not
  JSON, larger than ``result_max_bytes``) is dropped: still ``succeeded`` (never re-run:
  its side effects happened), ``result`` null, ``last_error`` "result dropped: <why>",
  and a ``job-result-dropped`` warning;
* an exception -> ``retry`` after ``random() * retry_backoff.ceiling(attempt)`` seconds
  while ``attempt < max_attempts``, then ``dead/failed`` with the error (type, message,
  the last frames of the traceback);
* ``taskq.Snooze(seconds)`` raised or returned -> ``snoozed``: queued again in that many
  seconds with the attempt given back and ``snooze_count + 1``; past the actor's
  ``max_snoozes`` -> ``dead/snoozed_too_often``;
* no such actor here -> ``dead/unknown_actor``; an undecodable payload ->
  ``dead/undecodable``.
"""

from __future__ import annotations

import random
import traceback
from typing import Any

from ..events import JOB_DEAD, JOB_RESULT_DROPPED, JOB_RETRY_SCHEDULED
from ..jobs import ClaimedJob, DeadReason, Outcome, OutcomeKind
from ..logs import get_logger
from ..payload import encode_result
from ..registry import RetryBackoff

log = get_logger(__name__)

ERROR_MAX_CHARS = 4000
RESULT_DROPPED_NOTE = "result dropped"  # how last_error of a succeeded job starts
TRACEBACK_FRAMES = 8


#: how many links of an exception's cause chain an error names
CAUSE_DEPTH = 5


def describe_error(exc: BaseException) -> str:
    """``Type: message``, the innermost frames of the traceback, then its causes
    (``Caused by: Type: message``, from ``raise ... from`` or an exception raised while
    handling another), bounded in size."""
    head = f"{type(exc).__name__}: {exc}"
    frames = traceback.format_tb(exc.__traceback__, limit=-TRACEBACK_FRAMES)
    text = head + ("\n" + "".join(frames).rstrip() if frames else "")
    cause, seen = _cause_of(exc), {id(exc)}
    while cause is not None and id(cause) not in seen and len(seen) <= CAUSE_DEPTH:
        seen.add(id(cause))
        text += f"\nCaused by: {type(cause).__name__}: {cause}"
        cause = _cause_of(cause)
    if len(text) > ERROR_MAX_CHARS:
        text = text[: ERROR_MAX_CHARS - 15] + "\n...[truncated]"
    return text


def _cause_of(exc: BaseException) -> BaseException | None:
    if exc.__cause__ is not None:
        return exc.__cause__
    return None if exc.__suppress_context__ else exc.__context__


def succeeded(job: ClaimedJob, result: Any, result_max_bytes: int) -> Outcome:
    if result is None:
        return Outcome(job.id, job.attempt, OutcomeKind.SUCCEEDED)
    result_json, why = encode_result(result, actor=job.actor, max_bytes=result_max_bytes)
    if why is not None:
        return result_dropped(job, why)
    return Outcome(job.id, job.attempt, OutcomeKind.SUCCEEDED, result_json=result_json)


def result_dropped(job: ClaimedJob, why: str) -> Outcome:
    """The job ran but its result cannot be stored: ``succeeded``, no result, the reason
    in ``last_error``. Never a failure: its side effects happened; a retry would repeat
    them. The same for every runner (async, sync, cpu_bound).

    A workflow's step is the exception: the steps after it read its result, so a result
    that cannot be stored fails the step (``dead/unstorable_result``, never retried, the
    limit named) and the steps after it follow the failure rule."""
    if job.workflow_id is not None:
        return dead(
            job,
            DeadReason.UNSTORABLE_RESULT,
            f"UnstorableResult: {why} (a workflow step's result goes to the steps after it: "
            "the limit is the worker's result_max_bytes)",
        )
    log.event(JOB_RESULT_DROPPED, job=str(job.id), actor=job.actor, error=why)
    return Outcome(
        job.id, job.attempt, OutcomeKind.SUCCEEDED, error=f"{RESULT_DROPPED_NOTE}: {why}"
    )


def failed(job: ClaimedJob, error: str, backoff: RetryBackoff) -> Outcome:
    """A clean failure (exception, timeout): retry with full jitter or give up."""
    if job.attempt < job.max_attempts:
        delay = random.random() * backoff.ceiling(job.attempt)
        log.event(
            JOB_RETRY_SCHEDULED,
            job=str(job.id),
            actor=job.actor,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            delay=round(delay, 3),
            error=error.splitlines()[0] if error else None,
        )
        return Outcome(job.id, job.attempt, OutcomeKind.RETRY, error=error, retry_delay=delay)
    return dead(job, DeadReason.FAILED, error)


def snoozed(job: ClaimedJob, seconds: float, max_snoozes: int) -> Outcome:
    """The job asked to run again in ``seconds``: no attempt charged, unless it has
    already snoozed ``max_snoozes`` times (then it is dead: it cannot snooze forever)."""
    if job.snooze_count >= max_snoozes:
        return dead(
            job,
            DeadReason.SNOOZED_TOO_OFTEN,
            f"Snooze: snoozed {job.snooze_count} times, the actor's max_snoozes is {max_snoozes}",
        )
    return Outcome(job.id, job.attempt, OutcomeKind.SNOOZED, retry_delay=seconds)


def dead(job: ClaimedJob, reason: str, error: str) -> Outcome:
    log.event(
        JOB_DEAD,
        job=str(job.id),
        actor=job.actor,
        reason=reason,
        attempt=job.attempt,
        error=error.splitlines()[0] if error else None,
    )
    return Outcome(job.id, job.attempt, OutcomeKind.DEAD, error=error, dead_reason=reason)


def cancelled(job: ClaimedJob, note: str | None = None) -> Outcome:
    """The run was stopped on purpose (a cancel; or never started because its cancel
    came first): ``cancelled``, nothing charged."""
    return Outcome(job.id, job.attempt, OutcomeKind.CANCELLED, error=note)


def crashed(job: ClaimedJob, cause: str, *, blamed: bool) -> Outcome:
    """The process running the job died: the store applies the crash rules. ``blamed``:
    the death points at this job (taskq.blame), so it counts toward poison."""
    return Outcome(job.id, job.attempt, OutcomeKind.CRASHED, error=cause, blamed=blamed)
