"""Running worker middleware (``taskq.Middleware``, taskq/middleware.py) around every job.

Hooks run on the event loop inside the consumer, in list order before the job and in
reverse order after it (``MiddlewareChain``); the ``*_in_thread`` hooks run in a sync
actor's thread around its function (``MiddlewareChain.in_thread``), and only the
middleware that overrides them is called there. A hook that raises is the hook's fault,
neither the job's nor the consumer's: it is logged (``middleware-hook-failed``, once per
hook, method and exception type, then at most once a minute with the count of the ones
not logged), the other hooks still run, the job runs and is acknowledged as usual, and
the consumer carries on: a flaky metrics plugin never stops jobs or trips the
crash-loop guard. ``taskq worker`` loads middleware from ``TASKQ_WORKER_MIDDLEWARE``
(comma-separated ``MODULE:ATTR`` references, each a ``Middleware`` instance or class).
A hook that raises a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
``KeyboardInterrupt``) is not caught: it ends the consumer, which is replaced as any
dead consumer is.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..events import MIDDLEWARE_HOOK_FAILED
from ..exceptions import ConfigError
from ..jobs import ClaimedJob, Outcome
from ..logs import get_logger
from ..middleware import Middleware
from ..registry import resolve_reference

log = get_logger(__name__)

REPORT_EVERY = 60.0  # seconds between two lines about the same failing hook


def load_middleware(references: Sequence[str]) -> list[Middleware]:
    """Resolve ``MODULE:ATTR`` references to middleware instances (classes are built)."""
    loaded: list[Middleware] = []
    for reference in references:
        obj = resolve_reference(reference)
        if isinstance(obj, type) and issubclass(obj, Middleware):
            obj = obj()
        if not isinstance(obj, Middleware):
            raise ConfigError(
                f"{reference!r} is a {type(obj).__name__}, not a taskq worker Middleware"
            )
        loaded.append(obj)
    return loaded


def _has_thread_hooks(middleware: Middleware) -> bool:
    cls = type(middleware)
    return (
        cls.before_job_in_thread is not Middleware.before_job_in_thread
        or cls.after_job_in_thread is not Middleware.after_job_in_thread
    )


@dataclass(slots=True)
class _Failing:
    last_logged: float
    not_logged: int = 0


class MiddlewareChain:
    """A worker's middleware, called so that a hook that raises stops nothing."""

    def __init__(
        self,
        middleware: Sequence[Middleware],
        *,
        report_every: float = REPORT_EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._middleware = list(middleware)
        self._reversed = self._middleware[::-1]
        self._report_every = report_every
        self._clock = clock
        self._failing: dict[tuple[str, str, str], _Failing] = {}
        self._lock = threading.Lock()  # _failed is also called from sync actors' threads
        self.failures = 0
        # only the middleware with thread hooks of its own is called in the threads
        self._in_thread = [m for m in self._middleware if _has_thread_hooks(m)]
        self._in_thread_reversed = self._in_thread[::-1]

    def __bool__(self) -> bool:
        return bool(self._middleware)

    @property
    def has_thread_hooks(self) -> bool:
        return bool(self._in_thread)

    def before_job(self, job: ClaimedJob) -> None:
        for hook in self._middleware:
            try:
                hook.before_job(job)
            except Exception as exc:
                self._failed(hook, "before_job", job, exc)

    def after_job(self, job: ClaimedJob, outcome: Outcome | None) -> None:
        for hook in self._reversed:
            try:
                hook.after_job(job, outcome)
            except Exception as exc:
                self._failed(hook, "after_job", job, exc)

    def in_thread(self, job: ClaimedJob, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` for a sync actor's thread: wrapped in the ``*_in_thread`` hooks of the
        middleware that has them (else ``fn`` itself: nothing added to the job)."""
        if not self._in_thread:
            return fn

        def run(*args: Any, **kwargs: Any) -> Any:
            for hook in self._in_thread:
                try:
                    hook.before_job_in_thread(job)
                except Exception as exc:
                    self._failed(hook, "before_job_in_thread", job, exc)
            try:
                return fn(*args, **kwargs)
            finally:
                for hook in self._in_thread_reversed:
                    try:
                        hook.after_job_in_thread(job)
                    except Exception as exc:
                        self._failed(hook, "after_job_in_thread", job, exc)

        return run

    def _failed(self, hook: Middleware, method: str, job: ClaimedJob, exc: Exception) -> None:
        """Log it once per (hook, method, exception type), then at most every minute."""
        name = f"{type(hook).__module__}.{type(hook).__qualname__}"
        key = (name, method, type(exc).__name__)
        with self._lock:
            self.failures += 1
            now = self._clock()
            seen = self._failing.get(key)
            if seen is not None and now - seen.last_logged < self._report_every:
                seen.not_logged += 1
                return
            not_logged = 0 if seen is None else seen.not_logged
            self._failing[key] = _Failing(last_logged=now)
        log.event(
            MIDDLEWARE_HOOK_FAILED,
            hook=name,
            method=method,
            error=f"{type(exc).__name__}: {exc}",
            job=str(job.id),
            actor=job.actor,
            not_logged_since_last=not_logged,
            note="the job runs on; the next failures of this kind are logged at most "
            f"every {self._report_every:g} s",
            exc_info=exc if seen is None else None,
        )
