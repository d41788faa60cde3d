"""The main loop of one pool process (runs in the child, started by forkserver or spawn).

It speaks the messages of ``protocol.py``: ``Ready`` (or ``InitFailed``) once, then for
each ``Run`` a ``Started`` and exactly one reply.

Anything that is not an ``Exception`` (``SystemExit``, a signal, a segfault) ends the
process: the parent sees the death and names it. The child never outlives its worker:
a thread waits on a pidfd of the worker (see ``_die_with_owner``), ``PR_SET_PDEATHSIG``
covers spawn, and pipe EOF ends the idle loop. A SIGTERM ends it only when its worker
sent it (``signals.py``); SIGINT is the worker's to handle.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from dataclasses import replace
from multiprocessing.connection import Connection
from typing import Any

from .. import exit_codes
from ..context import JobContext, running
from ..events import PROCESS_POOL_SIGNAL_IGNORED
from ..exceptions import Snooze
from ..logs import configure, get_logger, job_context
from ..payload import encode_result
from ..registry import Registry, load_registry
from . import signals
from .causes import memory_limit_mib
from .priority import give_way
from .protocol import (
    InitFailed,
    JobReply,
    Raised,
    Ready,
    ResultNotSent,
    Returned,
    Run,
    Started,
    Undecodable,
    from_wire,
    send,
)

INIT_FAILED_EXIT_CODE = exit_codes.POOL_INIT_FAILED
_PR_SET_PDEATHSIG = 1

log = get_logger(__name__)


def _die_with_owner(owner_pid: int) -> None:
    """Exit when the worker that owns the pool dies, even while a job is running.

    Under forkserver the parent is the fork server, which lives on while any of its
    children does, so parent-death signals alone are not enough: a thread waits on a
    pidfd of the owner (Linux >= 5.3), or polls it where pidfds are missing.
    ``PR_SET_PDEATHSIG`` covers the spawn start method (the owner is the parent).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    try:
        owner_fd: int | None = os.pidfd_open(owner_pid)
    except ProcessLookupError:
        os._exit(1)  # the owner is already gone
    except (AttributeError, OSError):
        owner_fd = None

    def watch() -> None:
        if owner_fd is not None:
            select.select([owner_fd], [], [])  # readable once the owner has exited
            os._exit(1)
        while True:
            try:
                os.kill(owner_pid, 0)
            except ProcessLookupError:
                os._exit(1)
            except PermissionError:
                pass
            time.sleep(0.5)

    threading.Thread(target=watch, name="taskq-owner-watch", daemon=True).start()


def _sigterm_ignored(sender: int) -> None:
    log.event(PROCESS_POOL_SIGNAL_IGNORED, pid=os.getpid(), sender=sender)


def _run_initializers(registry: Registry) -> None:
    if registry.initializer is not None:
        registry.initializer()
    for actor in registry:
        if actor.cpu_bound and actor.initializer is not None:
            actor.initializer()


def _decode(args_json: str, kwargs_json: str) -> tuple[list[Any], dict[str, Any]]:
    args = json.loads(args_json)
    kwargs = json.loads(kwargs_json)
    if not isinstance(args, list):
        raise ValueError(f"arguments must be a JSON array, got {type(args).__name__}")
    if not isinstance(kwargs, dict):
        raise ValueError(f"keyword arguments must be a JSON object, got {type(kwargs).__name__}")
    return args, kwargs


def _run_one(registry: Registry, job: Run) -> JobReply:
    try:
        args, kwargs = _decode(job.args_json, job.kwargs_json)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        return Undecodable(job.seq, f"payload of {job.actor!r} cannot be decoded: {exc}")
    try:
        actor = registry.get(job.actor)
        value = actor.fn(*args, **kwargs)
    except Exception as exc:
        return Raised(job.seq, type(exc).__qualname__, str(exc), traceback.format_exc())
    if isinstance(value, Snooze):  # returned, not raised: the same (as on the other runners)
        return Raised(job.seq, "Snooze", str(value), "")
    result_json, why = encode_result(value, actor=job.actor, max_bytes=job.max_result_bytes)
    if result_json is None:
        return ResultNotSent(job.seq, why or "")
    return Returned(job.seq, result_json)


def _serve(conn: Connection, registry: Registry, job: Run) -> None:
    send(conn, Started(job.seq, memory_limit_mib()))
    # the job's fields stamp the actor's log records, which this process writes to the
    # worker's stderr in the worker's format
    if job.context_json is not None:  # taskq.current_job() too; meta changes go back
        with running(JobContext.from_text(job.context_json)) as ctx:
            reply = _run_one(registry, job)
        meta_json = ctx.changed_meta_json
        if meta_json is not None and isinstance(reply, Returned | Raised | ResultNotSent):
            reply = replace(reply, meta_json=meta_json)
    else:
        with job_context(dict(job.log_fields)) if job.log_fields else contextlib.nullcontext():
            reply = _run_one(registry, job)
    try:
        send(conn, reply)
    except MemoryError as exc:
        send(
            conn,
            ResultNotSent(
                job.seq, f"the result of {job.actor!r} could not be sent: MemoryError: {exc}"
            ),
        )


def main(
    conn: Connection,
    registry_ref: str,
    sys_path: list[str],
    env: dict[str, str],
    owner_pid: int,
    nice: int = 0,
) -> None:
    """Entry point of a pool process (the ``multiprocessing.Process`` target)."""
    told_apart = signals.block()  # before any thread starts: only the worker's SIGTERM ends it
    _die_with_owner(owner_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the worker to handle
    give_way(nice)  # below the worker that owns it (the fork server runs at the worker's)
    os.environ.update(env)
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    configure()
    if told_apart:
        signals.watch(owner_pid, _sigterm_ignored)
    try:
        registry = load_registry(registry_ref)
        _run_initializers(registry)
    except Exception:
        send(conn, InitFailed(traceback.format_exc()))
        conn.close()
        os._exit(INIT_FAILED_EXIT_CODE)
    send(conn, Ready(os.getpid(), memory_limit_mib()))
    while True:
        try:
            message = from_wire(conn.recv())
        except (EOFError, OSError):
            return  # the worker closed the pipe or died
        except ValueError:
            return  # not a message: exit, the pool sees the death
        match message:
            case Run() as job:
                _serve(conn, registry, job)
            case _:
                return  # not ours to answer: exit, the pool sees the death
