"""Worker middleware: the extension seam around every job a consumer runs.

Subclass ``Middleware`` and override the hooks you need (the base ones do nothing)::

    class Timing(Middleware):
        def before_job(self, job): ...
        def after_job(self, job, outcome): ...   # outcome is None when given back

Hooks run on the event loop inside the consumer, in list order before the job and in
reverse order after it. A hook that raises is a fault of the *consumer*, not of the job:
the consumer dies (logged as ``worker died``), the task supervisor replaces it, and the
job it held is not lost: given back uncharged if it had not run, acknowledged with its
outcome if it had. ``taskq worker`` loads middleware from ``TASKQ_WORKER_MIDDLEWARE``
(comma-separated ``MODULE:ATTR`` references, each a ``Middleware`` instance or class).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..exceptions import ConfigError
from ..jobs import ClaimedJob, Outcome
from ..registry import resolve_reference


class Middleware:
    def before_job(self, job: ClaimedJob) -> None:
        """Called before the job runs."""

    def after_job(self, job: ClaimedJob, outcome: Outcome | None) -> None:
        """Called after the job ran, before its outcome is acknowledged."""


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
