"""Every log event taskq emits, declared once: its name, level, fields, meaning, and the
metric it counts (Oban's telemetry events read side by side: names in one place, the
logger one consumer of them, the docs a listing of them). ``declare.py`` is the
machinery; the events are declared in the module of their area (``worker.py``,
``pool.py``, ``workgroup.py``, ``workflows.py``) and all of them are importable from here.

A module logs an event through its logger's one method::

    log = get_logger(__name__)
    log.event(JOB_DEAD, job=str(job.id), actor=job.actor, reason=reason, error=first_line)

which writes the line at the event's level and, when the event counts a metric
(``Count``), increments it with labels taken from the fields. A new event is a new
constant in its area's module (``docs/events.md`` is generated from them: ``make docs``;
a test fails when it drifts, and another when a call passes a field the event does not
declare).

The rules of the vocabulary:

- **Names** are kebab-case, the thing first, then what happened (``job-dead``,
  ``store-unavailable``, ``workgroup-child-started``). ``FROZEN`` names keep the spelling
  the public contract gives them (dashboards and alert rules match them):
  ``workgroup.restart_scheduled``, ``workgroup.stream_pump_failed``, ``process_pool_broken``,
  ``worker died``, ...
- **Fields** mean one thing everywhere: ``error`` is the error text (``Type: message``;
  a traceback, when there is one, comes as ``exception`` from ``exc_info``); ``job`` a job
  id and ``actor`` its actor's name; ``worker_id`` a worker's UUID; ``worker`` the name of
  a workgroup's ``[[workers]]`` entry (a child); ``consumer`` a consumer task's index in
  one worker; ``part`` a worker's part (``fetcher``, ``acker``, ...); ``reason`` a word
  from a small set (``child_exit``, ``SIGTERM``, ``failed``), never error text.
- A worker's consumer tasks are **consumers** (the seed calls them a "worker pool", and so
  do the frozen ``worker died`` and the ``taskq_pool_workers_*`` metrics).
"""

from .declare import ALL, CRITICAL, DEBUG, ERROR, FROZEN, INFO, WARNING, Count, Event, markdown

# the areas in the order docs/events.md lists them
# isort: off
from .worker import *  # noqa: F403
from .pool import *  # noqa: F403
from .workgroup import *  # noqa: F403
from .workflows import *  # noqa: F403
# isort: on

__all__ = ["ALL", "CRITICAL", "DEBUG", "ERROR", "FROZEN", "INFO", "WARNING", "Count", "Event"]
__all__ += ["markdown"]
