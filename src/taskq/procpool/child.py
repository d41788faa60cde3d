"""The main loop of one pool process (runs in the child, started by forkserver or spawn).

Protocol over one ``multiprocessing`` Pipe (tuples of str/int only; the payload and the
result stay JSON text end to end, never pickled objects of the user's)::

    child  -> parent  ("ready", pid, memory_limit_mib)      initializers done
    child  -> parent  ("init_failed", traceback_text)       an initializer raised; then exit 70
    parent -> child   ("run", seq, actor, args_json, kwargs_json, max_result_bytes)
    child  -> parent  ("started", seq, memory_limit_mib)     the job was received
    child  -> parent  ("ok", seq, result_json)
    child  -> parent  ("error", seq, type, message, traceback_text)   the job raised
    child  -> parent  ("result_error", seq, message)         the result could not be returned
    child  -> parent  ("undecodable", seq, message)          the payload is not valid JSON

Anything that is not an ``Exception`` (``SystemExit``, a signal, a segfault) ends the
process: the parent sees the death and names it. The child never outlives its worker:
a thread waits on a pidfd of the worker (see ``_die_with_owner``), ``PR_SET_PDEATHSIG``
covers spawn, and pipe EOF ends the idle loop.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import sys
import threading
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any

from ..logs import configure, get_logger
from ..registry import Registry, load_registry
from .causes import memory_limit_mib

INIT_FAILED_EXIT_CODE = 70
_PR_SET_PDEATHSIG = 1

log = get_logger(__name__)

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


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


def _run_one(conn: Connection, registry: Registry, message: tuple[Any, ...]) -> None:
    _tag, seq, actor_name, args_json, kwargs_json, max_result_bytes = message
    conn.send(("started", seq, memory_limit_mib()))
    try:
        args, kwargs = _decode(args_json, kwargs_json)
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        conn.send(("undecodable", seq, f"payload of {actor_name!r} cannot be decoded: {exc}"))
        return
    try:
        actor = registry.get(actor_name)
        value = actor.fn(*args, **kwargs)
    except Exception as exc:
        conn.send(("error", seq, type(exc).__qualname__, str(exc), traceback.format_exc()))
        return
    try:
        result_json = _encoder.encode(value)
    except Exception as exc:
        conn.send(
            (
                "result_error",
                seq,
                f"the result of {actor_name!r} could not be returned: "
                f"not JSON-serialisable: {type(exc).__name__}: {exc}",
            )
        )
        return
    if len(result_json) > max_result_bytes:  # characters <= bytes: a cheap first check
        size = len(result_json.encode())
        if size > max_result_bytes:
            conn.send(
                (
                    "result_error",
                    seq,
                    f"the result of {actor_name!r} is {size} bytes, "
                    f"over the pool's result limit of {max_result_bytes} bytes",
                )
            )
            return
    try:
        conn.send(("ok", seq, result_json))
    except MemoryError as exc:
        conn.send(
            (
                "result_error",
                seq,
                f"the result of {actor_name!r} could not be returned: MemoryError: {exc}",
            )
        )


def main(
    conn: Connection, registry_ref: str, sys_path: list[str], env: dict[str, str], owner_pid: int
) -> None:
    """Entry point of a pool process (the ``multiprocessing.Process`` target)."""
    _die_with_owner(owner_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is for the worker to handle
    os.environ.update(env)
    for entry in reversed(sys_path):
        if entry not in sys.path:
            sys.path.insert(0, entry)
    configure()
    try:
        registry = load_registry(registry_ref)
        _run_initializers(registry)
    except Exception:
        conn.send(("init_failed", traceback.format_exc()))
        conn.close()
        os._exit(INIT_FAILED_EXIT_CODE)
    conn.send(("ready", os.getpid(), memory_limit_mib()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return  # the worker closed the pipe or died
        if message[0] == "run":
            _run_one(conn, registry, message)
        elif message[0] == "stop":
            return
