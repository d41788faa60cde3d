"""``taskq.Middleware``: the extension seam around every job a worker runs.

Subclass it and override the hooks you need (the base ones do nothing)::

    class Timing(taskq.Middleware):
        def before_job(self, job): ...
        def after_job(self, job, outcome): ...   # outcome is None when given back

Hooks run on the worker's event loop, in list order before the job and in reverse order
after it. A hook that raises is logged (``middleware-hook-failed``, rate-limited) and
changes nothing else: the job runs and is acknowledged, the consumer carries on
(taskq/worker/middleware.py). Give middleware to ``Worker(config, middleware=[...])`` or
name it for ``taskq worker`` in ``TASKQ_WORKER_MIDDLEWARE`` (``MODULE:ATTR``, comma
separated; instances or classes).
"""

from __future__ import annotations

from .jobs import ClaimedJob, Outcome


class Middleware:
    """The base of worker middleware: no-op hooks to override."""

    def before_job(self, job: ClaimedJob) -> None:
        """Called before the job runs."""

    def after_job(self, job: ClaimedJob, outcome: Outcome | None) -> None:
        """Called after the job ran, before its outcome is acknowledged."""
