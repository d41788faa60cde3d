"""``taskq worker``: the whole worker process around a ``Worker``.

``run(config)`` installs the signal handlers (SIGTERM/SIGINT stop gracefully, a second
one hurries, SIGHUP reloads credentials), sets the parent-death signal and has the worker
watch its parent when started by a workgroup (``--workgroup-instance``: the
``parent-watch`` part), runs the worker and returns the exit code (``taskq.exit_codes``):

* 0 clean shutdown;
* 1 cannot start: bad ``--actors`` reference, store unreachable or not migrated, actor
  config drift (one error line says which);
* 3 the crash-loop guard tripped;
* 4 a part of the worker died unexpectedly.

With ``TASKQ_RELOAD_INTERVAL`` (seconds) the worker also re-reads ``TASKQ_DSN_FILE`` that
often and reloads its credentials when the file changed, as on SIGHUP.

A workgroup child given the read end of its supervisor's wake-up relay (``TASKQ_WAKE_FD``,
``taskq.wakeups``) waits on it instead of LISTENing itself (``worker/relay.py``).

Middleware for the process comes from ``TASKQ_WORKER_MIDDLEWARE`` (comma-separated
``MODULE:ATTR``) in addition to ``config.middleware``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import sys

from .. import exit_codes, logs, parentdeath, settings, wakeups
from ..events import WORKER_CANNOT_START
from ..exceptions import TaskqError
from ..logs import get_logger
from . import signals
from .config import WorkerConfig
from .worker import Worker

log = get_logger(__name__)

MIDDLEWARE_ENV = "TASKQ_WORKER_MIDDLEWARE"


def run(config: WorkerConfig) -> int:
    """Run a worker process to the end; return its exit code."""
    # a workgroup child was told its supervisor's pid (``import taskq`` already checked
    # it and set the parent-death signal); a child started by hand watches whoever
    # started it
    parent = parentdeath.expected_parent() or os.getppid()
    if config.workgroup_instance is not None:
        signals.set_parent_death_signal()
    extra = tuple(r.strip() for r in os.environ.get(MIDDLEWARE_ENV, "").split(",") if r.strip())
    if extra:
        config = dataclasses.replace(config, middleware=config.middleware + extra)
    try:
        return asyncio.run(_main(config, parent))
    except TaskqError as exc:
        # the documented one line for people and scripts, like every `taskq` command;
        # under JSON logs the event too, for whatever collects them (a workgroup's pumps)
        if logs.is_json():
            log.event(WORKER_CANNOT_START, error=str(exc), error_type=type(exc).__name__)
        print(f"taskq: {exc}", file=sys.stderr, flush=True)
        return exit_codes.CANNOT_START


async def _main(config: WorkerConfig, parent: int) -> int:
    interval = settings.reload_interval()  # a bad value stops the start, with one line
    worker = Worker(
        config,
        parent=parent if config.workgroup_instance is not None else None,
        reload_interval=interval,
        # a workgroup child whose supervisor relays the host's LISTEN connection
        wake_fd=wakeups.take_fd(),
    )
    loop = asyncio.get_running_loop()
    remove = signals.install(loop, on_stop=worker.request_stop, on_reload=worker.request_reload)
    try:
        return await worker.run()
    finally:
        remove()
