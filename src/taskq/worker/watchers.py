"""What a worker watches outside itself, as parts (``lifecycle.Part``): its parent process
and its credentials file. No loose task: each runs in the worker's ``Parts``.

* ``ParentWatch``: a workgroup child (``--workgroup-instance``) must not outlive its
  supervisor. On Linux the kernel's parent-death signal already sends SIGTERM
  (``signals.set_parent_death_signal``); this part also polls ``os.getppid()`` every
  second for the platforms that signal does not cover: a change means the parent is
  gone (``parent-gone``, graceful shutdown). The race of a supervisor dying before the
  child set the signal is closed by ``taskq.parentdeath`` at ``import taskq``.
* ``CredentialReload``: SIGHUP (``request``) re-reads ``TASKQ_DSN_FILE`` and rebuilds
  the store connections; with ``TASKQ_RELOAD_INTERVAL`` (where no one can send SIGHUP)
  it does the same whenever the file's content changed. One reload at a time; a failure
  keeps the old connections (``credentials-reload-failed``) and never ends the worker.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable

from ..events import CREDENTIALS_FILE_CHANGED, PARENT_GONE
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger

log = get_logger(__name__)


class ParentWatch(Stoppable):
    name = "parent-watch"
    stop_timeout = 1.0

    def __init__(
        self, parent_pid: int, on_gone: Callable[[str], None], interval: float = 1.0
    ) -> None:
        self.parent_pid = parent_pid
        self._on_gone = on_gone
        self._interval = interval
        self._stopped = StopSignal()

    async def run(self) -> None:
        while os.getppid() == self.parent_pid:
            if await self._stopped.sleep(self._interval):
                return
        log.event(PARENT_GONE, parent_pid=self.parent_pid, now_parent=os.getppid())
        self._on_gone("parent-gone")
        await self._stopped.wait()  # the stop it asked for reaches this part too


class CredentialReload(Stoppable):
    name = "credential-reload"
    stop_timeout = None  # a reload in hand finishes: the stores are never half rebuilt

    def __init__(
        self,
        reload: Callable[[], Awaitable[bool]],
        *,
        path: str | None = None,
        interval: float | None = None,
    ) -> None:
        self._reload = reload
        self._path = path
        self._interval = interval if path else None
        self._requested = asyncio.Event()
        self._stopped = StopSignal()

    def request(self) -> None:
        """SIGHUP: reload once (a request made before the part runs is kept)."""
        self._requested.set()

    async def run(self) -> None:
        last = _read(self._path) if self._interval is not None else None
        stop = asyncio.ensure_future(self._stopped.wait())
        try:
            while not self._stopped:
                requested = asyncio.ensure_future(self._requested.wait())
                try:
                    await asyncio.wait(
                        {requested, stop}, timeout=self._interval, return_when="FIRST_COMPLETED"
                    )
                finally:
                    requested.cancel()
                if self._stopped:
                    return
                if self._requested.is_set():
                    self._requested.clear()
                    await self._reload()
                    last = _read(self._path) if self._interval is not None else last
                elif self._interval is not None:
                    current = _read(self._path)
                    if current is not None and current != last:
                        log.event(CREDENTIALS_FILE_CHANGED, dsn_file=self._path)
                        if await self._reload():
                            last = current
        finally:
            stop.cancel()
            await asyncio.gather(stop, return_exceptions=True)


def _read(path: str | None) -> str | None:
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return file.read().strip()
    except OSError:
        return None  # a missing or unreadable file is reported by the reload itself
