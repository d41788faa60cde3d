"""The worker process: fetch, supervise consumers, run, ack, heartbeat, rescue, prune,
schedule, cancel.

``Worker(config, registry=...)`` is the machinery (``await worker.run()``,
``worker.request_stop()``); ``main.run(config)`` is the ``taskq worker`` process around
it (signals, parent watch, exit codes). One idea per module:

* ``worker``      ``Worker``: builds the parts, in order
* ``config``      ``WorkerConfig``: every worker option and its one default
* ``fetcher``     batched claims sized to free capacity; NOTIFY wake-ups, polling fallback
* ``buffer``      claimed jobs waiting for a consumer; free capacity
* ``supervisor``  the task supervisor: replace dead consumers, crash-loop guard
* ``consumer``    one consumer loop; never loses the job it holds
* ``runners``     run a job: async on the loop, sync in ``threads``, cpu in ``cpu_runner``
* ``solo``        a job blamed for a shared death runs with nothing beside it
* ``outcomes``    success / retry / dead with a reason
* ``acker``       batched acknowledgements, retried through outages
* ``heartbeat``   the worker row and lease extension, on its own connection
* ``rescuer``     rescue the runs of dead workers (expired leases)
* ``pruner``      prune finished jobs and silent worker rows; the autovacuum check
* ``scheduler``   enqueue the due ticks of the registry's periodic schedules
* ``cancels``     cancel requests for running jobs: the watcher part, stopping each runner
* ``lag``         event-loop lag monitor
* ``health``      ``/live`` ``/ready`` ``/metrics``
* ``main``        the ``taskq worker`` process around a ``Worker``
* ``signals``     SIGTERM/SIGINT/SIGHUP, parent death
* ``middleware``  runs the ``taskq.Middleware`` hooks; a hook that raises is logged, never fatal
* ``outage``      back off on a dead store, log once per outage
"""

from typing import TYPE_CHECKING, Any

from ..middleware import Middleware
from .config import WorkerConfig

if TYPE_CHECKING:
    from .worker import Worker

__all__ = ["Middleware", "Worker", "WorkerConfig"]


def __getattr__(name: str) -> Any:
    # ``Worker`` (and every part) is imported on first use, so that reading
    # ``taskq.worker.config`` (the CLI's flag defaults, the workgroup's) stays light.
    if name == "Worker":
        from .worker import Worker

        return Worker
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
