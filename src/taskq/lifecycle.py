"""One lifecycle for everything that runs: ``Part``, and ``Parts`` that runs a list of them
(the worker's parts, the workgroup supervisor's).

A part (the fetcher, the consumers, the acker, the heartbeat...) is anything with::

    name: str                       # in logs: "fetcher", "consumers", ...
    stop_timeout: float | None      # how long run() may take to return after stop();
                                    # past it run() is cancelled (logged). None: the part
                                    # bounds its own wind-down (a grace, a flush timeout)
    async def start() -> None       # acquire what it needs (bind a port, register a row,
                                    # start processes); raise TaskqError to refuse; return
                                    # when ready
    async def run() -> None         # do the work until stop(), then wind down and return;
                                    # returning or raising before stop() is a death
    def stop(*, hurry=False) -> None  # ask run() to wind down; idempotent, never blocks;
                                    # hurry (a second signal): skip any grace that is left

A part may also set ``start_early = True``: its start needs none of the parts before it
and takes long (the CPU pool's processes import the actors), so ``Parts`` begins it
together with the first part's and awaits it in its place; it runs and stops in its
place as any other.

``Parts`` holds the ordered list. ``start`` starts them in order (a part that refuses
stops the ones already started, in reverse, and the error goes up); each part's
``run`` is a task ``Parts`` owns; ``wait`` returns when a stop is asked for or a part
ended on its own; ``stop`` stops them in reverse order, each once, waiting for each
``run`` to return before the next is asked. So a part is stopped after every part that
depends on it: list the parts a part uses before it.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from .events import PART_STOP_TIMED_OUT, WORKER_PART_DIED
from .logs import get_logger

log = get_logger(__name__)


class Part(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def stop_timeout(self) -> float | None: ...

    async def start(self) -> None: ...

    async def run(self) -> None: ...

    def stop(self, *, hurry: bool = False) -> None: ...


class PartState(enum.Enum):
    NEW = "new"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"


class StopSignal:
    """The stop request of one part: idempotent, awaitable, and a sleep it cuts short."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self.hurried = False

    def set(self, *, hurry: bool = False) -> None:
        self.hurried = self.hurried or hurry
        self._event.set()

    def __bool__(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    async def sleep(self, seconds: float) -> bool:
        """Sleep ``seconds`` unless stopped first; True when stopped."""
        if self._event.is_set():
            return True
        try:
            async with asyncio.timeout(seconds):
                await self._event.wait()
        except TimeoutError:
            return False
        return True


class Stoppable:
    """The ``stop`` of a part that winds down on its ``StopSignal`` (``self._stopped``,
    made in its ``__init__``), and a ``start`` with nothing to acquire (overridden by a
    part that has)."""

    _stopped: StopSignal

    async def start(self) -> None:
        pass

    def stop(self, *, hurry: bool = False) -> None:
        self._stopped.set(hurry=hurry)


@dataclass(slots=True, eq=False)
class _Entry:
    part: Part
    state: PartState = PartState.NEW
    task: asyncio.Task[None] | None = None
    reported: bool = False


@dataclass(frozen=True, slots=True)
class Ended:
    """A part whose ``run`` ended before it was asked to stop."""

    name: str
    error: BaseException | None  # None: it returned (or was cancelled from outside)
    cancelled: bool


class Parts:
    def __init__(self, parts: Sequence[Part]) -> None:
        names = [p.name for p in parts]
        if len(set(names)) != len(names):
            raise ValueError(f"part names must be unique: {names}")
        self._entries = [_Entry(p) for p in parts]
        self._hurried = False

    def __iter__(self) -> Iterator[Part]:
        return (e.part for e in self._entries)

    def state(self, name: str) -> PartState:
        return next(e.state for e in self._entries if e.part.name == name)

    async def start(self) -> None:
        """Start every part in order (those that start early begun with the first); if
        one refuses, stop the started ones and re-raise."""
        early = {
            e: asyncio.create_task(e.part.start(), name=f"taskq-{e.part.name}-start")
            for e in self._entries
            if getattr(e.part, "start_early", False)
        }
        for entry in self._entries:
            entry.state = PartState.STARTING
            try:
                starting = early.pop(entry, None)
                await (entry.part.start() if starting is None else starting)
            except BaseException:
                entry.state = PartState.STOPPED
                await self._started_early(early)
                await self.stop()
                raise
            self._run(entry)

    def _run(self, entry: _Entry) -> None:
        entry.task = asyncio.create_task(entry.part.run(), name=f"taskq-{entry.part.name}")
        entry.state = PartState.RUNNING

    async def _started_early(self, early: dict[_Entry, asyncio.Task[None]]) -> None:
        """A start failed: let the early starts not yet awaited finish (a start cut short
        could leave what it began behind) and run the ones that started, so that ``stop``
        stops them with the rest."""
        await asyncio.gather(*early.values(), return_exceptions=True)
        for entry, task in early.items():  # in the parts' order
            if not task.cancelled() and task.exception() is None:
                self._run(entry)

    async def wait(self, stop: asyncio.Event) -> list[Ended]:
        """Until ``stop`` is set or a part's ``run`` ends; the parts that ended on their own."""
        tasks = {e.task for e in self._entries if e.task is not None}
        stop_waiter = asyncio.create_task(stop.wait(), name="taskq-stop-wait")
        try:
            await asyncio.wait({*tasks, stop_waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_waiter.cancel()
            await asyncio.gather(stop_waiter, return_exceptions=True)
        ended = []
        for entry in self._entries:
            task = entry.task
            if task is not None and task.done() and entry.state is PartState.RUNNING:
                entry.reported = True
                cancelled = task.cancelled()
                error = None if cancelled else task.exception()
                ended.append(Ended(entry.part.name, error, cancelled))
        return ended

    def hurry(self) -> None:
        """A second stop request: parts stopping now, and those stopped later, skip their grace."""
        self._hurried = True
        for entry in self._entries:
            if entry.state is PartState.STOPPING:
                entry.part.stop(hurry=True)

    async def stop(self) -> None:
        """Stop every started part in reverse order, each once."""
        for entry in reversed(self._entries):
            if entry.state is not PartState.RUNNING:
                continue
            entry.state = PartState.STOPPING
            part, task = entry.part, entry.task
            assert task is not None
            part.stop(hurry=self._hurried)
            done, _ = await asyncio.wait({task}, timeout=part.stop_timeout)
            if not done:
                log.event(
                    PART_STOP_TIMED_OUT,
                    part=part.name,
                    timeout=part.stop_timeout,
                    note="cancelled",
                )
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
            elif not entry.reported and not task.cancelled() and task.exception() is not None:
                exc = task.exception()
                log.event(
                    WORKER_PART_DIED,
                    part=part.name,
                    during="shutdown",
                    error=f"{type(exc).__name__}: {exc}",
                    exc_info=exc,
                )
            entry.state = PartState.STOPPED

    async def abort(self) -> None:
        """Cancel whatever still runs (``stop`` itself was cut short); never raises."""
        tasks = [e.task for e in self._entries if e.task is not None and not e.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for entry in self._entries:
            if entry.state is not PartState.NEW:
                entry.state = PartState.STOPPED
