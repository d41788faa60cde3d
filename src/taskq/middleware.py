"""``taskq.Middleware``: the extension seam around every job a worker runs.

Subclass it and override the hooks you need (the base ones do nothing)::

    class Timing(taskq.Middleware):
        def before_job(self, job): ...
        def after_job(self, job, outcome): ...   # outcome is None when given back

Hooks run on the worker's event loop, in list order before the job and in reverse order
after it. A sync actor's job also calls ``before_job_in_thread`` and
``after_job_in_thread`` in the thread that runs its function, right around it: the
place for what belongs to that thread (Django's database connections are per thread:
``taskq.contrib.django.CloseOldConnections`` closes the broken and the expired ones there,
as Django does around a request).

A hook that raises is logged (``middleware-hook-failed``, rate-limited) and changes
nothing else: the job runs and is acknowledged, the consumer carries on
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

    def before_job_in_thread(self, job: ClaimedJob) -> None:
        """A sync actor's job: called in the thread that runs it, just before its function."""

    def after_job_in_thread(self, job: ClaimedJob) -> None:
        """A sync actor's job: called in that thread just after its function returned or
        raised (also past its timeout: then when the function at last returns)."""
