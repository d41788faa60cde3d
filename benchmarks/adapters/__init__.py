"""One module per system under test; ``ALL`` in the order the table shows them."""

from __future__ import annotations

from .base import Adapter
from .celery import ADAPTER as CELERY
from .dramatiq import ADAPTER as DRAMATIQ
from .executor import ADAPTER as EXECUTOR
from .huey import ADAPTER as HUEY
from .pgqueuer import ADAPTER as PGQUEUER
from .procrastinate import ADAPTER as PROCRASTINATE
from .taskq import ADAPTER as TASKQ
from .taskq import SQLITE_ADAPTER as TASKQ_SQLITE

ALL: tuple[Adapter, ...] = (
    TASKQ,
    TASKQ_SQLITE,
    PGQUEUER,
    PROCRASTINATE,
    HUEY,
    DRAMATIQ,
    CELERY,
    EXECUTOR,
)
BY_NAME = {a.name: a for a in ALL}

__all__ = ["ALL", "BY_NAME", "Adapter"]
