"""Signals and the parent: how a running worker is told to stop or reload.

* SIGTERM / SIGINT: graceful shutdown; a second one skips what is left of the grace.
* SIGHUP: re-read ``TASKQ_DSN_FILE`` and rebuild the store's connections; never exits
  (the ``credential-reload`` part, ``watchers.py``, which also does it on
  ``TASKQ_RELOAD_INTERVAL`` where no one can send SIGHUP).
* A workgroup child (``--workgroup-instance``) must not outlive its supervisor: on Linux
  ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` makes the kernel send SIGTERM when the parent
  dies (``set_parent_death_signal``), and the ``parent-watch`` part (``watchers.py``)
  also polls ``os.getppid()`` for the platforms prctl does not cover. The race of a
  supervisor dying before the child set prctl is closed by ``taskq.parentdeath``, which
  runs first at ``import taskq`` and compares with the pid the supervisor passed.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable

from .. import parentdeath
from ..events import PARENT_DEATH_SIGNAL_UNAVAILABLE
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
