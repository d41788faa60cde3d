"""Periodic schedules: declaring them, and which ticks a look owes (an injected "now")."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest

import taskq
from taskq.jobs import ScheduleInfo
from taskq.periodic import MISSED_AFTER, Missed, Schedule, listing, tick_key


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_periodic_stacks_on_actor_or_stands_alone() -> None:
    registry = taskq.Registry()

    @registry.periodic("*/5 * * * *", timezone="Europe/Paris")
    @registry.actor(queue="reports", idempotent=True)
    def report() -> None: ...

    @registry.periodic("0 3 * * *", args=["full"], missed="run_once")
    def cleanup(kind: str) -> str:
        return kind

    assert isinstance(report, taskq.Actor) and report.queue == "reports"
    assert registry.get("cleanup") is cleanup and cleanup("x") == "x"
    assert [(s.name, s.actor, s.cron, s.timezone, s.missed) for s in registry.schedules] == [
        ("report", "report", "*/5 * * * *", "Europe/Paris", Missed.SKIP),
        ("cleanup", "cleanup", "0 3 * * *", "UTC", Missed.RUN_ONCE),
    ]
    assert registry.schedules[1].args == ("full",)


def test_one_actor_twice_needs_a_second_name() -> None:
    registry = taskq.Registry()

    @registry.periodic("0 * * * *", name="hourly", kwargs={"scope": "hour"})
    @registry.periodic("0 0 * * *", kwargs={"scope": "day"})
    @registry.actor
    def rollup(scope: str) -> None: ...

    assert [s.name for s in registry.schedules] == ["rollup", "hourly"]
    with pytest.raises(taskq.ConfigError, match="a schedule named 'rollup' already exists"):
        registry.periodic("* * * * *")(rollup)


@pytest.mark.parametrize(
    ("cron", "options", "message"),
    [
        ("61 * * * *", {}, "invalid cron expression '61 \\* \\* \\* \\*'"),
        ("* * *", {}, "invalid cron expression"),
        ("", {}, "a cron expression is required"),
        ("* * * * *", {"timezone": "Mars/Olympus"}, "unknown timezone 'Mars/Olympus'"),
        ("* * * * *", {"missed": "backfill"}, "missed must be one of skip, run_once"),
        ("* * * * *", {"args": [object()]}, "not JSON"),
        ("* * * * *", {"name": "no spaces please"}, "invalid schedule name"),
    ],
)
def test_bad_schedules_are_refused_at_declaration(
    cron: str, options: dict[str, object], message: str
) -> None:
    registry = taskq.Registry()
    with pytest.raises(taskq.TaskqError, match=message):

        @registry.periodic(cron, **options)  # type: ignore[arg-type]
        def job(*args: object) -> None: ...

    assert registry.schedules == []


def test_periodic_below_actor_is_refused_with_the_fix() -> None:
    registry = taskq.Registry()
    with pytest.raises(taskq.ConfigError, match=r"put @registry\.periodic above @registry\.actor"):

        @registry.actor  # type: ignore[arg-type]
        @registry.periodic("* * * * *")
        def job() -> None: ...


def test_an_actor_of_another_registry_is_refused() -> None:
    mine, theirs = taskq.Registry(), taskq.Registry()

    @theirs.actor
    def job() -> None: ...

    with pytest.raises(taskq.ConfigError, match="belongs to another registry"):
        mine.periodic("* * * * *")(job)


def every_five(missed: str = "skip") -> Schedule:
    return Schedule(name="s", actor="a", cron="*/5 * * * *", missed=Missed(missed))


def test_due_ticks_are_those_after_since_up_to_now() -> None:
    due = every_five().due(at("2026-12-03T10:00:00"), at("2026-12-03T10:05:20"))
    assert due.enqueue == [at("2026-12-03T10:05:00")]  # since is excluded
    assert (due.skipped, due.last) == (0, at("2026-12-03T10:05:00"))

    nothing = every_five().due(at("2026-12-03T10:10:00"), at("2026-12-03T10:14:59"))
    assert (nothing.enqueue, nothing.skipped, nothing.last) == ([], 0, None)


def test_ticks_missed_while_no_worker_ran_are_skipped_by_default() -> None:
    since, now = at("2026-12-03T09:00:00"), at("2026-12-03T10:00:30")
    due = every_five().due(since, now)
    assert due.enqueue == [at("2026-12-03T10:00:00")]  # within MISSED_AFTER of now
    assert due.skipped == 11  # 09:05 .. 09:55
    assert due.last == at("2026-12-03T10:00:00")


def test_run_once_collapses_missed_ticks_into_the_latest() -> None:
    since, now = at("2026-12-03T09:00:00"), at("2026-12-03T09:58:00")
    due = every_five("run_once").due(since, now)
    assert due.enqueue == [at("2026-12-03T09:55:00")]
    assert due.skipped == 10
    on_time_too = every_five("run_once").due(since, at("2026-12-03T10:00:30"))
    assert on_time_too.enqueue == [at("2026-12-03T09:55:00"), at("2026-12-03T10:00:00")]


def test_a_tick_is_late_only_past_missed_after() -> None:
    tick = at("2026-12-03T10:05:00")
    just_in_time = every_five().due(at("2026-12-03T10:04:00"), tick + MISSED_AFTER)
    assert just_in_time.enqueue == [tick]
    too_late = every_five().due(
        at("2026-12-03T10:04:00"), tick + MISSED_AFTER + timedelta(seconds=1)
    )
    assert (too_late.enqueue, too_late.skipped) == ([], 1)


def test_timezone_and_daylight_saving_time() -> None:
    paris = Schedule(name="s", actor="a", cron="30 2 * * *", timezone="Europe/Paris")
    # 2026-03-29: 02:30 does not exist in Paris (clocks jump 02:00 -> 03:00): run at 03:00
    due = paris.due(at("2026-03-28T12:00:00"), at("2026-03-30T12:00:00"))
    assert due.skipped == 2 and due.last == at("2026-03-30T00:30:00")  # 29th 03:00, 30th 02:30
    assert paris.next_after(at("2026-03-28T12:00:00")) == at("2026-03-29T01:00:00")
    # 2026-10-25: 02:30 happens twice in Paris: it runs once
    ticks = []
    since = at("2026-10-24T12:00:00")
    while since < at("2026-10-26T12:00:00"):
        since = paris.next_after(since)
        ticks.append(since)
    assert ticks[:2] == [at("2026-10-25T00:30:00"), at("2026-10-26T01:30:00")]


def test_seconds_field_and_the_tick_key() -> None:
    fast = Schedule(name="beat", actor="a", cron="*/2 * * * * *")
    due = fast.due(at("2026-12-03T10:00:00"), at("2026-12-03T10:00:05"))
    assert due.enqueue == [at(f"2026-12-03T10:00:0{s}") for s in (2, 4)]
    assert tick_key("beat", due.enqueue[0]) == "periodic:beat:2026-12-03T10:00:02+00:00"


def test_listing_works_out_the_next_run_from_what_the_store_recorded() -> None:
    info = ScheduleInfo(
        name="report",
        actor="report",
        cron="*/5 * * * *",
        timezone="Europe/Paris",
        missed="skip",
        first_seen_at=at("2026-12-03T08:00:00"),
        seen_at=at("2026-12-03T08:00:00"),
        last_tick=at("2026-12-03T10:05:00"),
    )
    row = listing(info, now=at("2026-12-03T10:07:30"))
    assert row["next_run"] == "2026-12-03T10:10:00+00:00"
    assert row["last_tick"] == "2026-12-03T10:05:00+00:00"
    assert row["explained"] == "Every fifth minute of every hour"
    # a clock behind the last tick recorded (another host's): the run after that tick
    assert listing(info, now=at("2026-12-03T10:00:00"))["next_run"] == "2026-12-03T10:10:00+00:00"
    broken = listing(dataclasses.replace(info, cron="not a cron"), now=at("2026-12-03T10:07:30"))
    assert (broken["next_run"], broken["explained"]) == (None, "-")
