"""``taskq queues`` (list, pause, resume, limit) and ``taskq jobs cancel`` as a user runs them."""

from __future__ import annotations

import asyncio
import json

import pytest

from taskq.jobs import ActorConfig
from tests.acceptance.test_cli import assert_one_line_error, taskq
from tests.support.helpers import migrated_store

QUEUE_KEYS = {
    "name",
    "depth",
    "oldest_age_s",
    "running",
    "paused",
    "concurrency_limit",
    "rate_limit",
}


@pytest.fixture
def migrated(target):
    taskq(target, "migrate")
    return target


def queues_json(target) -> dict[str, dict]:
    return {q["name"]: q for q in json.loads(taskq(target, "queues", "--json").stdout)}


def test_queues_lists_pauses_resumes_and_limits(migrated):
    t = migrated
    for _ in range(2):
        taskq(t, "enqueue", "some_actor", "--queue", "mail")
    rows = queues_json(t)
    assert set(rows["mail"]) >= QUEUE_KEYS
    assert rows["mail"]["depth"]["queued"] == 2 and rows["mail"]["running"] == 0
    assert rows["mail"]["oldest_age_s"] >= 0 and rows["mail"]["paused"] is False

    assert "paused queue mail" in taskq(t, "queues", "pause", "mail").stdout
    assert queues_json(t)["mail"]["paused"] is True
    assert "yes" in taskq(t, "queues").stdout
    taskq(t, "queues", "resume", "mail")
    assert queues_json(t)["mail"]["paused"] is False

    taskq(t, "queues", "limit", "mail", "--concurrency", "3")
    taskq(t, "queues", "limit", "mail", "--rate", "10/minute")  # keeps the concurrency
    row = queues_json(t)["mail"]
    assert (row["concurrency_limit"], row["rate_limit"]) == (3, "10/minute")
    taskq(t, "queues", "limit", "mail", "--clear")
    row = queues_json(t)["mail"]
    assert (row["concurrency_limit"], row["rate_limit"]) == (None, None)


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (("queues", "limit", "mail"), "give --concurrency"),
        (("queues", "limit", "mail", "--rate", "5/day"), "invalid rate"),
        (("queues", "limit", "mail", "--concurrency", "0"), "expected an integer >= 1"),
        (("queues", "limit", "mail", "--clear", "--concurrency", "2"), "--clear alone"),
        (("queues", "pause", "no such queue"), "invalid queue name"),
    ],
)
def test_bad_queue_commands_are_one_line(migrated, args, fragment):
    assert_one_line_error(taskq(migrated, *args, check=False), fragment)


def test_jobs_cancel_reports_each_job_and_exits_by_what_happened(migrated):
    t = migrated
    first = taskq(t, "enqueue", "some_actor", "--queue", "default").stdout.strip()
    second = taskq(t, "enqueue", "some_actor", "--queue", "default").stdout.strip()
    proc = taskq(t, "jobs", "cancel", first, second)
    assert proc.stdout.splitlines() == [f"cancelled {first}", f"cancelled {second}"]
    shown = json.loads(taskq(t, "jobs", "show", first, "--json").stdout)
    assert shown["state"] == "cancelled" and shown["cancelled_by"].startswith("cli:")
    assert shown["cancelled_at"] is not None
    third = taskq(t, "enqueue", "some_actor", "--queue", "default").stdout.strip()
    again = taskq(t, "jobs", "cancel", first, third, check=False)
    assert again.returncode == 3  # one had already finished: nothing changed for it
    assert again.stdout.strip() == f"cancelled {third}"
    assert again.stderr.strip() == f"taskq: job {first} is already cancelled: nothing changed"
    unknown = taskq(t, "jobs", "cancel", "018f0000-0000-7000-8000-000000000000", check=False)
    assert_one_line_error(unknown, "no job with id")
    assert unknown.returncode == 1


def record_actor(target, name: str, queue: str) -> None:
    """What a worker whose registry has the actor does when it starts."""

    async def go() -> None:
        async with migrated_store(target.dsn, target.schema) as store:
            config = ActorConfig(name, queue, 3, 2, idempotent=False, cpu_bound=False, timeout=None)
            await store.sync_actor_configs([config], force=False)

    asyncio.run(go())


def test_actors_limit_sets_and_lists_an_actors_limits(migrated):
    t = migrated
    record_actor(t, "charge_card", "payments")
    out = taskq(t, "actors", "limit", "charge_card", "--concurrency", "2").stdout
    assert out.strip() == "actor charge_card: concurrency 2, rate unlimited"
    taskq(t, "actors", "limit", "charge_card", "--rate", "5/second")  # keeps the concurrency
    (row,) = json.loads(taskq(t, "actors", "--json").stdout)
    assert row == {
        "name": "charge_card",
        "queue": "payments",
        "concurrency_limit": 2,
        "rate_limit": "5/second",
    }
    assert "charge_card" in taskq(t, "actors").stdout
    taskq(t, "actors", "limit", "charge_card", "--clear")
    assert [r["concurrency_limit"] for r in json.loads(taskq(t, "actors", "--json").stdout)] == [
        None
    ]
    assert_one_line_error(taskq(t, "actors", "limit", "charge_card", check=False), "give")


def test_actors_limit_of_an_actor_no_worker_recorded_is_refused(migrated):
    t = migrated
    record_actor(t, "charge_card", "payments")
    refused = taskq(t, "actors", "limit", "charge_crad", "--concurrency", "2", check=False)
    assert refused.returncode == 1
    assert_one_line_error(
        refused,
        "no worker recorded an actor named 'charge_crad' (recorded: charge_card): "
        "did you mean 'charge_card'?",
    )
    assert json.loads(taskq(t, "actors", "--json").stdout)[0]["concurrency_limit"] is None


@pytest.mark.parametrize("command", [("pause",), ("limit", "--concurrency", "2")])
def test_queues_pause_or_limit_of_a_queue_nothing_uses_warns(migrated, command):
    t = migrated
    record_actor(t, "charge_card", "payments")
    taskq(t, "enqueue", "some_actor", "--queue", "mail")
    verb, *rest = command
    for queue in ("payments", "mail"):  # an actor's queue, a queue with jobs: silent
        assert taskq(t, "queues", verb, queue, *rest).stderr == ""
    done = taskq(t, "queues", verb, "mial", *rest)  # done anyway, with a warning
    assert done.returncode == 0 and "mial" in done.stdout
    assert done.stderr.splitlines() == [
        "taskq: warning: no actor or job uses queue 'mial' (used: mail, payments); "
        "check the name if that is not what you meant"
    ]
