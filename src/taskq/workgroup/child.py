"""One supervised child: its command line, its process, its state and how it ended.

A child is a real ``python -m taskq worker`` process started in its own process group
(so a terminal's Ctrl-C reaches it once, through the supervisor), with its stdout and
stderr on pipes that the pumps drain. The ``Child`` object outlives its processes: it
keeps the restart policy, the restart count and the last exit cause across incarnations.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import os
import signal
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from .. import options, redaction
from ..events import WORKER_CANNOT_START, WORKER_STARTED
from ..parentdeath import SUPERVISOR_PID_ENV
from ..restart import RestartPolicy
from ..settings import HEALTH_DSN_ENV
from ..wakeups import WAKE_FD_ENV
from ..worker.config import WorkerConfig
from .config import SupervisorConfig, WorkerSpec, health_socket_path

#: the bounded read of the pumps: a longer line is forwarded in pieces this big
PIPE_LIMIT = 64 * 1024
#: the event a worker logs once its signal handlers are in place
WORKER_STARTED_EVENT = WORKER_STARTED.name
#: the event a worker logs when it cannot start (its ``error`` says why)
CANNOT_START_EVENT = WORKER_CANNOT_START.name


class ChildState(enum.StrEnum):
    STARTING = "starting"  # not spawned yet
    RUNNING = "running"
    STOPPING = "stopping"  # SIGTERM sent (shutdown or unhealthy)
    BACKOFF = "backoff"  # dead, waiting for its restart
    LATCHED = "latched"  # burst limit exceeded: never restarted
    STOPPED = "stopped"  # supervisor shut down


def describe_exit(returncode: int) -> str:
    """``killed by SIGKILL`` / ``exited with code 3`` / ``exited cleanly (code 0)``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"killed by {name}"
    if returncode == 0:
        return "exited cleanly (code 0)"
    return f"exited with code {returncode}"


def exit_fields(returncode: int) -> dict[str, object]:
    """``exit_signal`` or ``exit_code`` for a log line."""
    if returncode < 0:
        try:
            return {"exit_signal": signal.Signals(-returncode).name}
        except ValueError:
            return {"exit_signal": -returncode}
    return {"exit_code": returncode}


@dataclass(frozen=True, slots=True)
class ChildCommand:
    """How to start one child: argv and environment."""

    argv: tuple[str, ...]
    env: dict[str, str]
    socket_path: str


def build_command(
    spec: WorkerSpec,
    *,
    actors: str,
    instance: UUID,
    supervisor: SupervisorConfig,
    executable: str | None = None,
    base_env: Mapping[str, str] | None = None,
) -> ChildCommand:
    socket_path = health_socket_path(instance, spec.name)
    config = dataclasses.replace(
        spec.config,
        actors=actors,
        workgroup_instance=instance,
        health_socket_path=socket_path,
        shutdown_grace=supervisor.child_shutdown_grace,
    )
    flags = options.to_argv(config, WorkerConfig)  # every option not at its default
    argv = [executable or sys.executable, "-m", "taskq", "worker", *flags]
    env = dict(os.environ if base_env is None else base_env)
    env["TASKQ_LOG_FORMAT"] = "json"  # the pumps parse it and re-emit in our format
    env["PYTHONUNBUFFERED"] = "1"  # a crash never strands output in a buffer
    # the child checks its parent against this before anything else (taskq.parentdeath)
    env[SUPERVISOR_PID_ENV] = str(os.getpid())
    return ChildCommand(tuple(argv), env, socket_path)


class Child:
    """The supervisor's record of one ``[[workers]]`` entry across its incarnations."""

    def __init__(self, spec: WorkerSpec, command: ChildCommand, policy: RestartPolicy) -> None:
        self.spec = spec
        self.command = command
        self.policy = policy
        self.state = ChildState.STARTING
        self.process: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        self.started_at: float | None = None  # monotonic
        self.restarts = 0
        self.last_exit_cause: str | None = None
        self.last_restart_reason: str | None = None
        self.healthy_once = False
        #: the worker logged ``worker-started``: its signal handlers are installed, so a
        #: forwarded SIGHUP reloads it instead of killing it
        self.signals_ready = False
        #: why the last incarnation could not start (its ``worker-cannot-start`` error)
        self.cannot_start: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None

    @property
    def latched(self) -> bool:
        return self.state is ChildState.LATCHED

    async def spawn(self, wake_fd: int | None = None) -> asyncio.subprocess.Process:
        """Start a fresh process; raises ``OSError`` when it cannot be started at all.
        ``wake_fd``: the read end of its wake-up relay pipe (``workgroup/relay.py``),
        passed to the child as ``TASKQ_WAKE_FD`` and closed here (started or not); such a
        child is not given ``TASKQ_PG_DSN_DIRECT`` (it needs no direct connection: a
        hundred children would each open one to check it)."""
        env = self.command.env
        pass_fds: tuple[int, ...] = ()
        if wake_fd is not None:  # relayed: the supervisor holds the host's direct connection
            env = {k: v for k, v in env.items() if k != HEALTH_DSN_ENV}
            env[WAKE_FD_ENV], pass_fds = str(wake_fd), (wake_fd,)
        try:
            os.unlink(self.command.socket_path)  # a SIGKILLed predecessor's socket
        except FileNotFoundError:
            pass
        except OSError:
            pass  # the child reports it if the path is really unusable
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                pass_fds=pass_fds,
                process_group=0,
                limit=PIPE_LIMIT,
            )
        finally:
            for fd in pass_fds:  # the child has its own copy now
                os.close(fd)
        self.process = process
        self.pid = process.pid
        self.started_at = time.monotonic()
        self.healthy_once = False
        self.signals_ready = False
        self.cannot_start = None
        self.state = ChildState.RUNNING
        return process

    def on_child_event(self, event: str, fields: Mapping[str, Any]) -> None:
        if event == WORKER_STARTED_EVENT:
            self.signals_ready = True
        elif event == CANNOT_START_EVENT and isinstance(fields.get("error"), str):
            self.cannot_start = redaction.text(fields["error"]) or None

    def not_ready(self) -> str | None:
        """Why this child keeps its workgroup from being ready, as far as the supervisor
        knows, or None while its process runs (then its own ``/ready`` decides). Never
        a secret (``taskq.redaction``)."""
        if self.state is ChildState.RUNNING and self.alive:
            return None
        cause = self.last_exit_cause or "not started yet"
        if self.cannot_start:
            cause += f": {self.cannot_start}"
        if self.state is ChildState.LATCHED:
            return (
                f"{self.name} latched (burst limit exceeded; restart the workgroup) "
                f"after it {cause}"
            )
        if self.state is ChildState.BACKOFF:
            return f"{self.name} in backoff after it {cause}"
        if self.state is ChildState.RUNNING:  # its process ended: the verdict is coming
            return f"{self.name} exited"
        return f"{self.name} {self.state.value}"

    def send(self, sig: signal.Signals) -> bool:
        """Signal the worker process itself; False if it is already gone."""
        if not self.alive or self.pid is None:
            return False
        try:
            os.kill(self.pid, sig)
        except ProcessLookupError:
            return False
        return True

    def kill_group(self) -> None:
        """SIGKILL the child's whole process group (the worker and anything it started)."""
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def status(self) -> dict[str, object]:
        return {
            "name": self.name,
            "pid": self.pid if self.alive else None,
            "state": self.state.value,
            "restarts": self.restarts,
            "last_exit_cause": self.last_exit_cause,
            "last_restart_reason": self.last_restart_reason,
            "latched": self.latched,
            "queues": list(self.spec.queues),
            "health_socket_path": self.command.socket_path,
            "uptime_seconds": (
                round(time.monotonic() - self.started_at, 3)
                if self.alive and self.started_at is not None
                else None
            ),
        }
