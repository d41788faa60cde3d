"""``taskq workgroup``: a TOML-configured supervisor of ``taskq worker`` processes.

Command-line entry points (called by ``taskq.cli`` after ``logs.configure()``)::

    validate_main(path) -> int   # print the summary and warnings; 1 on any error
    start_main(path) -> int      # supervise until SIGTERM/SIGINT; 0 after a clean stop

In-process use (``taskq demo``, tests)::

    from taskq.workgroup import Supervisor, SupervisionEvent, load_config

    config = load_config("workgroup.toml")          # or parse_config(dict, path)
    supervisor = Supervisor(config, on_event=print)  # optional: instance=, env=, executable=
    # env= is the environment the children get; the supervisor's own store (rescue,
    # health checks) follows it too unless [supervisor] health_pg_dsn is set
    task = asyncio.create_task(supervisor.run())     # install_signal_handlers=True in a CLI
    ...
    supervisor.status()        # the /status JSON as a dict
    supervisor.readiness()     # (ready, why)
    supervisor.reload()        # forward SIGHUP to the living children
    supervisor.request_stop()  # graceful; a second call kills the children at once
    await task                 # -> 0

``on_event`` is called on the loop thread with a ``SupervisionEvent(kind, worker, fields,
at)``; an exception it raises is logged and ignored. Kinds and their fields:

* ``started`` (instance), ``stopping`` (children, shutdown_grace), ``stopped``
* ``child_started`` (pid, restarts)
* ``child_exited`` (pid, exit_cause, returncode)
* ``unhealthy`` (pid, problem): the health check is about to kill the child
* ``jobs_rescued`` (pid, count, jobs: [(id, actor, state, dead_reason)])
* ``restart_scheduled`` (reason: child_exit | spawn_failed | unhealthy, delay, exit_cause,
  attempt)
* ``latched`` (reason, exit_cause, restarts_in_window): never restarted again
* ``reload_signal`` (children, workers, skipped)

Modules: ``config`` (TOML -> frozen dataclasses), ``validate`` (summary, warnings),
``child`` (one supervised child), ``pumps`` (output forwarding), ``health`` (DB heartbeat
checks), ``http`` (/live /ready /metrics /status), ``supervisor`` (the loop).
"""

from __future__ import annotations

import asyncio
import sys

from .. import exit_codes
from ..exceptions import InvalidWorkgroupConfig, TaskqError, WorkgroupStartError
from .config import WorkgroupConfig, load_config, parse_config
from .supervisor import SupervisionEvent, Supervisor
from .validate import check

EXIT_OK = exit_codes.OK
EXIT_ERROR = exit_codes.ERROR


def _say(message: str) -> None:
    print(f"taskq: {message}", file=sys.stderr, flush=True)


def validate_main(path: str, *, actors_default: str | None = None) -> int:
    """``taskq workgroup validate PATH`` (``actors_default``: see ``parse_config``)."""
    try:
        config = load_config(path, actors_default=actors_default)
    except InvalidWorkgroupConfig as exc:
        for error in exc.errors:
            _say(f"{exc.path}: {error}")
        return EXIT_ERROR
    try:
        report = check(config)
    except TaskqError as exc:
        _say(f'{path}: actors "{config.actors}" cannot be loaded: {exc.message}')
        return EXIT_ERROR
    for line in report.summary:
        print(line)
    for warning in report.warnings:
        _say(f"warning: {warning}")
    for error in report.errors:
        _say(f"{path}: {error}")
    if report.errors:
        return EXIT_ERROR
    print(
        f"ok: {path} is valid" + (f" ({len(report.warnings)} warnings)" if report.warnings else "")
    )
    return EXIT_OK


def start_main(path: str, *, actors_default: str | None = None) -> int:
    """``taskq workgroup start PATH``: runs until SIGTERM/SIGINT."""
    try:
        config = load_config(path, actors_default=actors_default)
    except InvalidWorkgroupConfig as exc:
        _say(str(exc))
        return EXIT_ERROR
    supervisor = Supervisor(config)
    try:
        return asyncio.run(supervisor.run(install_signal_handlers=True))
    except WorkgroupStartError as exc:
        _say(exc.message)
        return EXIT_ERROR


__all__ = [
    "InvalidWorkgroupConfig",
    "SupervisionEvent",
    "Supervisor",
    "WorkgroupConfig",
    "WorkgroupStartError",
    "load_config",
    "parse_config",
    "start_main",
    "validate_main",
]
