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

What is logged is what is stored: an outcome that ends a job in a way worth a line
(``job-retry-scheduled``, ``job-dead``, ``job-result-dropped``) carries that line as its
``note``, and the acker logs it (``announce``) only once the outcome is written. An
outcome the store did not take (fenced out: the job's lease was taken over and the crash
rules ended its run; or the worker stopped before the store answered) is logged as
``job-end-not-written`` instead (``not_written``): the store's state stands, and whoever
applied the crash rules logged it (``job-rescued``, ``workgroup-jobs-rescued``).
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

from ..events import (
    JOB_DEAD,
    JOB_END_NOT_WRITTEN,
    JOB_RESULT_DROPPED,
    JOB_RETRY_SCHEDULED,
    Event,
)
from ..jobs import ClaimedJob, DeadReason, Job, JobState, NotedOutcome, Outcome, OutcomeKind
from ..logs import get_logger
from ..payload import encode_result
from ..registry import RetryBackoff

log = get_logger(__name__)


class _Later:
    """``later.event(EVENT, **fields)``: a line to log once the outcome is written; the
    call has ``log.event``'s shape (and is checked like it: tests/unit/test_events.py)."""

    @staticmethod
    def event(event: Event, **fields: Any) -> tuple[Event, dict[str, Any]]:
        return event, fields


later = _Later()

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
    return NotedOutcome(
        job.id,
        job.attempt,
        OutcomeKind.SUCCEEDED,
        error=f"{RESULT_DROPPED_NOTE}: {why}",
        note=later.event(JOB_RESULT_DROPPED, job=str(job.id), actor=job.actor, error=why),
    )


def failed(job: ClaimedJob, error: str, backoff: RetryBackoff) -> Outcome:
    """A clean failure (exception, timeout): retry with full jitter or give up."""
    if job.attempt < job.max_attempts:
        delay = random.random() * backoff.ceiling(job.attempt)
        note = later.event(
            JOB_RETRY_SCHEDULED,
            job=str(job.id),
            actor=job.actor,
            attempt=job.attempt,
            max_attempts=job.max_attempts,
            delay=round(delay, 3),
            error=error.splitlines()[0] if error else None,
        )
        return NotedOutcome(
            job.id, job.attempt, OutcomeKind.RETRY, error=error, retry_delay=delay, note=note
        )
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
    note = later.event(
        JOB_DEAD,
        job=str(job.id),
        actor=job.actor,
        queue=job.queue,
        reason=reason,
        attempt=job.attempt,
        error=error.splitlines()[0] if error else None,
    )
    return NotedOutcome(
        job.id, job.attempt, OutcomeKind.DEAD, error=error, dead_reason=reason, note=note
    )


def cancelled(job: ClaimedJob, note: str | None = None) -> Outcome:
    """The run was stopped on purpose (a cancel; or never started because its cancel
    came first): ``cancelled``, nothing charged."""
    return Outcome(job.id, job.attempt, OutcomeKind.CANCELLED, error=note)


def crashed(job: ClaimedJob, cause: str, *, blamed: bool) -> Outcome:
    """The process running the job died: the store applies the crash rules. ``blamed``:
    the death points at this job (taskq.blame), so it counts toward poison."""
    return Outcome(job.id, job.attempt, OutcomeKind.CRASHED, error=cause, blamed=blamed)


def announce(outcomes: Sequence[Outcome]) -> None:
    """The outcomes were written: log what each one's note says (counting its metric)."""
    for outcome in [o for o in outcomes if o.__class__ is NotedOutcome]:  # the few
        if outcome.note is not None:
            event, fields = outcome.note
            log.event(event, **fields)


#: the state a written outcome leaves its job in
_WRITTEN_STATE = {
    OutcomeKind.SUCCEEDED: JobState.SUCCEEDED,
    OutcomeKind.RETRY: JobState.QUEUED,
    OutcomeKind.DEAD: JobState.DEAD,
}


def was_written(outcome: Outcome, job: Job | None) -> bool:
    """Does ``job``, read after a write that changed fewer rows than it had outcomes,
    show ``outcome`` (a noted one: succeeded, retry or dead)?"""
    return (
        job is not None
        and job.attempts == outcome.attempt
        and job.state == _WRITTEN_STATE.get(outcome.kind)
        and (outcome.kind is not OutcomeKind.DEAD or job.dead_reason == outcome.dead_reason)
    )


def not_written(outcomes: Iterable[Outcome], why: str) -> None:
    """The store did not take these outcomes: say so for each one that would have been
    logged, instead of its note."""
    for outcome in outcomes:
        if isinstance(outcome, NotedOutcome) and outcome.note is not None:
            _, fields = outcome.note
            log.event(
                JOB_END_NOT_WRITTEN,
                job=fields["job"],
                actor=fields["actor"],
                outcome=outcome.kind.value,
                reason=outcome.dead_reason,
                why=why,
            )
