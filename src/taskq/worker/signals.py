"""Signals and the parent: how a running worker is told to stop or reload.

* SIGTERM / SIGINT: graceful shutdown; a second one skips what is left of the grace.
* SIGHUP: re-read ``TASKQ_DSN_FILE`` and rebuild the store's connections; never exits.
  Where no one can send SIGHUP, ``TASKQ_RELOAD_INTERVAL`` does the same whenever the
  file's content changed (``reload_periodically``).
* A workgroup child (``--workgroup-instance``) must not outlive its supervisor: on Linux
  ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` makes the kernel send SIGTERM when the parent
  dies, and ``watch_parent`` also polls ``os.getppid()`` (a change means the parent is
  gone: graceful shutdown) for the platforms prctl does not cover. The race of a
  supervisor dying before the child set prctl is closed by ``taskq.parentdeath``, which
  runs first at ``import taskq`` and compares with the pid the supervisor passed.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable

from .. import parentdeath
from ..events import CREDENTIALS_FILE_CHANGED, PARENT_DEATH_SIGNAL_UNAVAILABLE, PARENT_GONE
from ..logs import get_logger

log = get_logger(__name__)


def install(
    loop: asyncio.AbstractEventLoop,
    *,
    on_stop: Callable[[str], None],
    on_reload: Callable[[], None],
) -> Callable[[], None]:
    """Route the signals to the worker; returns a function that removes the handlers."""
    handled: list[int] = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_stop, sig.name)
        handled.append(sig)
    if hasattr(signal, "SIGHUP"):
        loop.add_signal_handler(signal.SIGHUP, on_reload)
        handled.append(signal.SIGHUP)

    def remove() -> None:
        for sig in handled:
            loop.remove_signal_handler(sig)

    return remove


def set_parent_death_signal() -> bool:
    """Ask the kernel for SIGTERM when our parent dies (Linux only). True if set."""
    if not sys.platform.startswith("linux"):
        return False
    why_not = parentdeath.set_parent_death_signal(signal.SIGTERM)
    if why_not is not None:
        log.event(PARENT_DEATH_SIGNAL_UNAVAILABLE, error=why_not)
        return False
    return True


async def reload_periodically(
    path: str, interval: float, reload: Callable[[], Awaitable[bool]]
) -> None:
    """Every ``interval`` seconds, reload when the DSN file's content changed."""
    last = _read(path)
    while True:
        await asyncio.sleep(interval)
        current = _read(path)
        if current is not None and current != last:
            log.event(CREDENTIALS_FILE_CHANGED, dsn_file=path)
            if await reload():
                last = current


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except OSError:
        return None  # a missing or unreadable file is reported by the reload itself


async def watch_parent(
    parent_pid: int, on_gone: Callable[[str], None], interval: float = 1.0
) -> None:
    """Call ``on_gone`` once when our parent process is no longer ``parent_pid``."""
    while os.getppid() == parent_pid:  # noqa: ASYNC110 (nothing to wait on)
        await asyncio.sleep(interval)
    log.event(PARENT_GONE, parent_pid=parent_pid, now_parent=os.getppid())
    on_gone("parent-gone")
