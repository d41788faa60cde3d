"""Read-only records: checked by mypy in ``make lint`` (and by pyright), never run.

``ClaimedJob`` and ``Outcome`` are ``taskq.jobs.hot_record``s: mutable at run time (a
frozen dataclass costs a tenth of the worker's CPU a job to build), frozen to the type
checkers. Every line marked ``# type: ignore`` MUST be a type error (``warn_unused_ignores``
and pyright's ``reportUnnecessaryTypeIgnoreComment`` fail ``make lint`` otherwise): if the
records stopped being read-only to the checkers, an ignore would become unused.
"""

from __future__ import annotations

from dataclasses import replace
from uuid import uuid4

from taskq.jobs import ClaimedJob, NotedOutcome, Outcome, OutcomeKind

job = ClaimedJob(uuid4(), "resize", "images", "[]", "{}", 1, 3, 0, 2, True)
job.actor = "other"  # type: ignore  # read-only field
job.attempt += 1  # type: ignore  # read-only field

outcome = Outcome(job.id, job.attempt, OutcomeKind.SUCCEEDED)
outcome.kind = OutcomeKind.DEAD  # type: ignore  # read-only field
noted = NotedOutcome(job.id, job.attempt, OutcomeKind.DEAD, note=None)
noted.note = None  # type: ignore  # read-only field, in the subclass too

# a changed copy is how a record changes
retried = replace(outcome, kind=OutcomeKind.RETRY, retry_delay=1.5)
