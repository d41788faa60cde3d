"""``Parts``: start in order, stop in reverse, each once; a refused start; hurry; timeouts;
parts that start early."""

from __future__ import annotations

import asyncio

import pytest

from taskq.exceptions import ConfigError
from taskq.lifecycle import Parts, PartState, StopSignal
from tests.support.helpers import async_wait_until


class Recorder:
    """A part that records what happened to it in a shared journal."""

    def __init__(
        self,
        name: str,
        journal: list[str],
        *,
        refuse: bool = False,
        stop_timeout: float | None = None,
        ignores_stop: bool = False,
    ) -> None:
        self.name = name
        self.stop_timeout = stop_timeout
        self._journal = journal
        self._refuse = refuse
        self._ignores_stop = ignores_stop
        self._stopped = StopSignal()
        self.stops: list[bool] = []

    async def start(self) -> None:
        if self._refuse:
            raise ConfigError(f"{self.name} refuses")
        self._journal.append(f"start {self.name}")

    def stop(self, *, hurry: bool = False) -> None:
        self.stops.append(hurry)
        self._stopped.set(hurry=hurry)

    async def run(self) -> None:
        try:
            if self._ignores_stop:
                await asyncio.Event().wait()
            await self._stopped.wait()
            self._journal.append(f"stopped {self.name}")
        except asyncio.CancelledError:
            self._journal.append(f"cancelled {self.name}")
            raise


async def test_parts_start_in_order_and_stop_in_reverse_once():
    journal: list[str] = []
    a, b, c = (Recorder(n, journal) for n in "abc")
    parts = Parts([a, b, c])
    await parts.start()
    assert journal == ["start a", "start b", "start c"]
    assert parts.state("b") is PartState.RUNNING
    await parts.stop()
    await parts.stop()  # once
    assert journal[3:] == ["stopped c", "stopped b", "stopped a"]
    assert a.stops == b.stops == c.stops == [False]
    assert parts.state("a") is PartState.STOPPED


async def test_a_refused_start_stops_the_started_parts_and_raises():
    journal: list[str] = []
    a, b = Recorder("a", journal), Recorder("b", journal)
    bad, never = Recorder("bad", journal, refuse=True), Recorder("never", journal)
    parts = Parts([a, b, bad, never])
    with pytest.raises(ConfigError, match="bad refuses"):
        await parts.start()
    assert journal == ["start a", "start b", "stopped b", "stopped a"]
    assert never.stops == [] and bad.stops == []
    assert parts.state("never") is PartState.NEW


async def test_wait_reports_a_part_that_ended_on_its_own():
    journal: list[str] = []

    class Dies(Recorder):
        async def run(self) -> None:
            raise RuntimeError("broken")

    parts = Parts([Recorder("a", journal), Dies("dies", journal)])
    await parts.start()
    (ended,) = await asyncio.wait_for(parts.wait(asyncio.Event()), 5)
    assert ended.name == "dies" and isinstance(ended.error, RuntimeError)
    await parts.stop()
    assert journal[-1] == "stopped a"


async def test_hurry_reaches_the_part_stopping_now_and_those_after():
    journal: list[str] = []
    a = Recorder("a", journal)
    slow = Recorder("slow", journal, ignores_stop=True, stop_timeout=30)
    parts = Parts([a, slow])
    await parts.start()
    stopping = asyncio.create_task(parts.stop())
    await async_wait_until(
        lambda: _now(parts.state("slow") is PartState.STOPPING), what="slow to be stopping"
    )
    parts.hurry()
    assert slow.stops == [False, True]
    stopping.cancel()
    await asyncio.gather(stopping, return_exceptions=True)
    await parts.abort()
    assert "cancelled slow" in journal


async def test_a_part_past_its_stop_timeout_is_cancelled():
    journal: list[str] = []
    a = Recorder("a", journal)
    stuck = Recorder("stuck", journal, ignores_stop=True, stop_timeout=0.05)
    parts = Parts([a, stuck])
    await parts.start()
    await asyncio.wait_for(parts.stop(), 5)
    assert journal[2:] == ["cancelled stuck", "stopped a"]


async def test_stop_signal_sleep_is_cut_short():
    signal = StopSignal()
    assert await signal.sleep(0) is False
    signal.set()
    assert await asyncio.wait_for(signal.sleep(3600), 5) is True
    assert bool(signal)


async def _now(value: bool) -> bool:
    return value


class EarlyRecorder(Recorder):
    """A part that starts early (``start_early``): its start is begun with the first part's."""

    start_early = True

    def __init__(self, name: str, journal: list[str], *, refuse: bool = False) -> None:
        super().__init__(name, journal, refuse=refuse)
        self.begun = asyncio.Event()

    async def start(self) -> None:
        self._journal.append(f"begin {self.name}")
        self.begun.set()
        await super().start()


class WaitsFor(Recorder):
    """A part whose start returns only once ``other`` has begun its start."""

    def __init__(self, name: str, journal: list[str], other: EarlyRecorder) -> None:
        super().__init__(name, journal)
        self._other = other

    async def start(self) -> None:
        await asyncio.wait_for(self._other.begun.wait(), 5)  # not begun early: times out
        await super().start()


async def test_an_early_part_starts_with_the_first_and_runs_and_stops_in_its_place():
    journal: list[str] = []
    pool = EarlyRecorder("pool", journal)
    stores = WaitsFor("stores", journal, pool)
    parts = Parts([stores, Recorder("b", journal), pool, Recorder("c", journal)])
    await parts.start()
    assert journal == ["begin pool", "start pool", "start stores", "start b", "start c"]
    assert parts.state("pool") is PartState.RUNNING
    await parts.stop()
    assert journal[5:] == ["stopped c", "stopped pool", "stopped b", "stopped stores"]


async def test_a_refused_start_before_an_early_part_stops_it_too():
    journal: list[str] = []
    pool = EarlyRecorder("pool", journal)
    bad = Recorder("bad", journal, refuse=True)
    parts = Parts([Recorder("a", journal), bad, pool])
    with pytest.raises(ConfigError, match="bad refuses"):
        await parts.start()
    assert sorted(journal[:3]) == ["begin pool", "start a", "start pool"]
    assert journal[3:] == ["stopped pool", "stopped a"]  # started early: stopped in its place
    assert pool.stops == [False] and parts.state("pool") is PartState.STOPPED


async def test_an_early_part_that_refuses_raises_in_its_place():
    journal: list[str] = []
    pool = EarlyRecorder("pool", journal, refuse=True)
    never = Recorder("never", journal)
    parts = Parts([Recorder("a", journal), pool, never])
    with pytest.raises(ConfigError, match="pool refuses"):
        await parts.start()
    assert sorted(journal[:2]) == ["begin pool", "start a"]
    assert journal[2:] == ["stopped a"]
    assert parts.state("never") is PartState.NEW and never.stops == []
