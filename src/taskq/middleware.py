"""``taskq.Middleware``: the extension seam around every enqueue and every job.

Subclass it and override the hooks you need (the base ones do nothing)::

    class RequestId(taskq.Middleware):
        def before_enqueue(self, plan): plan.add_meta("request_id", current_request_id())
        def after_enqueue(self, plan, error): ...   # error is None when written
        def before_job(self, job): ...
        def after_job(self, job, outcome): ...      # outcome is None when given back

**Enqueue hooks** run in the producer (``Client(dsn, middleware=[...])``, the same for
``AsyncClient``) around every enqueue call (``enqueue``, ``enqueue_with``,
``enqueue_many``: an ``ActorPlan``; ``enqueue_workflow``: one ``WorkflowPlan`` with every
step of the run, of several actors: ``plan.actors[i]`` is job ``plan.ids[i]``'s), on
the caller's thread or task (or the ``Client``'s loop thread, in the caller's context):
``before_enqueue`` in list order before the jobs are written, ``after_enqueue`` in
reverse order after. A
``before_enqueue`` that raises refuses the enqueue: nothing is written and the exception
reaches the caller (the hooks that already ran get ``after_enqueue`` with it). An
``after_enqueue`` that raises is logged (``middleware-hook-failed``) and changes nothing:
the jobs are written. taskq's own enqueue tracing is such a middleware
(``taskq.tracing.EnqueueTracing``, on every client, a no-op without OpenTelemetry).

**Job hooks** run on a worker's event loop, in list order before the job and in reverse
order after it. A sync actor's job also calls ``before_job_in_thread`` and
``after_job_in_thread`` in the thread that runs its function, right around it: the
place for what belongs to that thread (Django's database connections are per thread:
``taskq.contrib.django.CloseOldConnections`` closes the broken and the expired ones there,
as Django does around a request). A job hook that raises is logged
(``middleware-hook-failed``, rate-limited) and changes nothing else: the job runs and is
acknowledged, the consumer carries on (taskq/worker/middleware.py). Give middleware to
``Worker(config, middleware=[...])`` or name it for ``taskq worker`` in
``TASKQ_WORKER_MIDDLEWARE`` (``MODULE:ATTR``, comma separated; instances or classes).
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from .events import MIDDLEWARE_HOOK_FAILED
from .jobs import ClaimedJob, Outcome
from .logs import get_logger
from .plan import EnqueuePlan

log = get_logger(__name__)


class Middleware:
    """The base of taskq middleware: no-op hooks to override."""

    def before_enqueue(self, plan: EnqueuePlan) -> None:
        """Called before an enqueue call's jobs are written; raise to refuse them."""

    def after_enqueue(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        """Called after they were written (``error`` None) or failed to be."""

    def before_job(self, job: ClaimedJob) -> None:
        """Called before the job runs."""

    def after_job(self, job: ClaimedJob, outcome: Outcome | None) -> None:
        """Called after the job ran, before its outcome is acknowledged."""

    def before_job_in_thread(self, job: ClaimedJob) -> None:
        """A sync actor's job: called in the thread that runs it, just before its function."""

    def after_job_in_thread(self, job: ClaimedJob) -> None:
        """A sync actor's job: called in that thread just after its function returned or
        raised (also past its timeout: then when the function at last returns)."""


class EnqueueHooks:
    """The enqueue hooks of a producer's middleware: ``with hooks.around(plan): write``."""

    def __init__(self, middleware: Sequence[Middleware]) -> None:
        cls = Middleware
        # only the middleware that override a hook are called for it
        self._before = [m for m in middleware if type(m).before_enqueue is not cls.before_enqueue]
        self._after = [m for m in middleware if type(m).after_enqueue is not cls.after_enqueue]
        self._after.reverse()

    def around(self, plan: EnqueuePlan) -> _Around:
        return _Around(self, plan)

    def before(self, plan: EnqueuePlan) -> None:
        done: list[Middleware] = []
        for hook in self._before:
            try:
                hook.before_enqueue(plan)
            except BaseException as exc:  # refused: the ones that ran hear of it
                for ran in reversed(done):
                    if ran in self._after:
                        self._after_one(ran, plan, exc)
                raise
            done.append(hook)

    def after(self, plan: EnqueuePlan, error: BaseException | None) -> None:
        for hook in self._after:
            self._after_one(hook, plan, error)

    @staticmethod
    def _after_one(hook: Middleware, plan: EnqueuePlan, error: BaseException | None) -> None:
        try:
            hook.after_enqueue(plan, error)
        except Exception as exc:
            log.event(
                MIDDLEWARE_HOOK_FAILED,
                hook=f"{type(hook).__module__}.{type(hook).__qualname__}",
                method="after_enqueue",
                error=f"{type(exc).__name__}: {exc}",
                actor=plan.actor,
                note="the jobs were written; the enqueue returns as usual",
            )


class _Around:
    """``before`` on entry, ``after`` on exit (with the exception, if one ends it)."""

    __slots__ = ("_hooks", "_plan")

    def __init__(self, hooks: EnqueueHooks, plan: EnqueuePlan) -> None:
        self._hooks, self._plan = hooks, plan

    def __enter__(self) -> EnqueuePlan:
        self._hooks.before(self._plan)
        return self._plan

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._hooks.after(self._plan, exc)
