"""The `taskq` command as a user meets it: real subprocesses against both stores."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.conftest import StoreTarget

JOB_KEYS = {
    "id",
    "actor",
    "queue",
    "state",
    "attempts",
    "crash_count",
    "dead_reason",
    "last_error",
    "run_at",
    "created_at",
}
WORKER_KEYS = {
    "id",
    "worker_label",
    "workgroup_instance",
    "pid",
    "hostname",
    "queues",
    "started_at",
    "last_seen_at",
}


def taskq(
    target: StoreTarget | None, *args: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    env = env if env is not None else target.env  # type: ignore[union-attr]
    proc = subprocess.run(
        [sys.executable, "-m", "taskq", *args], env=env, capture_output=True, text=True, timeout=60
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"taskq {' '.join(args)} exited {proc.returncode}: {proc.stderr}")
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert proc.returncode != 0, proc
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got: {proc.stderr!r}"
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith("taskq: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


@pytest.fixture
def migrated(target: StoreTarget) -> StoreTarget:
    taskq(target, "migrate")
    return target


def test_migrate_twice_is_a_no_op(target: StoreTarget) -> None:
    first = taskq(target, "migrate")
    assert "applied migrations" in first.stdout
    second = taskq(target, "migrate")
    assert second.stdout.strip() == "schema is up to date"


def test_enqueue_prints_the_id_and_show_finds_it(migrated: StoreTarget) -> None:
    out = taskq(
        migrated,
        "enqueue",
        "resize",
        "--args",
        '["a.png"]',
        "--kwargs",
        '{"width": 64}',
        "--queue",
        "images",
        "--priority",
        "-5",
        "--delay",
        "60",
    )
    job_id = uuid.UUID(out.stdout.strip())
    shown = json.loads(taskq(migrated, "jobs", "show", str(job_id), "--json").stdout)
    assert JOB_KEYS <= shown.keys()
    assert shown["id"] == str(job_id)
    assert (shown["actor"], shown["queue"], shown["state"]) == ("resize", "images", "queued")
    assert shown["args"] == ["a.png"] and shown["kwargs"] == {"width": 64}
    assert shown["priority"] == -5
    listed = json.loads(taskq(migrated, "jobs", "list", "--json").stdout)
    assert [j["id"] for j in listed] == [str(job_id)]
    assert JOB_KEYS <= listed[0].keys()


def test_stats_json_has_all_five_states(migrated: StoreTarget) -> None:
    taskq(migrated, "enqueue", "a", "--queue", "default")
    taskq(migrated, "enqueue", "b", "--queue", "default")
    stats = json.loads(taskq(migrated, "jobs", "stats", "--json").stdout)
    assert stats == {"queued": 2, "running": 0, "succeeded": 0, "dead": 0, "cancelled": 0}


def test_cancel_then_retry(migrated: StoreTarget) -> None:
    job_id = taskq(migrated, "enqueue", "a", "--queue", "default").stdout.strip()
    taskq(migrated, "jobs", "cancel", job_id)
    assert (
        json.loads(taskq(migrated, "jobs", "show", job_id, "--json").stdout)["state"] == "cancelled"
    )
    again = taskq(migrated, "jobs", "cancel", job_id, check=False)
    assert_one_line_error(again, "already cancelled: nothing changed")
    assert again.returncode == 3
    taskq(migrated, "jobs", "retry", job_id)
    assert json.loads(taskq(migrated, "jobs", "show", job_id, "--json").stdout)["state"] == "queued"


def test_workers_json_is_a_list(migrated: StoreTarget) -> None:
    assert json.loads(taskq(migrated, "workers", "--json").stdout) == []


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["enqueue", "a", "--queue", "default", "--args", "[1,"], "--args is not valid JSON"),
        (
            ["enqueue", "a", "--queue", "default", "--args", '{"x": 1}'],
            "--args must be a JSON array",
        ),
        (
            ["enqueue", "a", "--queue", "default", "--kwargs", "[1]"],
            "--kwargs must be a JSON object",
        ),
        (["enqueue", "a", "--queue", "default", "--delay", "soon"], "expected a number of seconds"),
        (["jobs", "list", "--limit", "0"], "expected an integer >= 1"),
        (
            ["worker", "--actors", "m:r", "--cpu-nice", "20"],
            "expected an integer between 0 and 19, got 20",
        ),
        (["jobs", "list", "--state", "exploded"], "invalid choice"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_bad_arguments_give_one_line(
    sqlite_target: StoreTarget, args: list[str], fragment: str
) -> None:
    proc = taskq(sqlite_target, *args, check=False)
    assert proc.returncode == 2
    assert_one_line_error(proc, fragment)


def test_unknown_job_id(migrated: StoreTarget) -> None:
    missing = str(uuid.uuid4())
    assert_one_line_error(
        taskq(migrated, "jobs", "show", missing, check=False), f"no job with id {missing}"
    )
    assert_one_line_error(
        taskq(migrated, "jobs", "show", "not-a-uuid", check=False), "invalid job id"
    )


def test_bad_dsn(sqlite_target: StoreTarget) -> None:
    env = sqlite_target.env | {"TASKQ_DSN": "mysql://localhost/x"}
    assert_one_line_error(taskq(None, "jobs", "stats", env=env, check=False), "invalid DSN")


def test_unreachable_database(sqlite_target: StoreTarget) -> None:
    env = sqlite_target.env | {"TASKQ_DSN": "postgresql://root@127.0.0.1:1/test"}
    assert_one_line_error(taskq(None, "jobs", "stats", env=env, check=False))


def test_bad_schema_name(pg_target: StoreTarget) -> None:
    env = pg_target.env | {"TASKQ_SCHEMA": "Robert'); DROP TABLE jobs;--"}
    assert_one_line_error(taskq(None, "migrate", env=env, check=False), "invalid schema name")


def test_unmigrated_store_says_to_migrate(target: StoreTarget) -> None:
    assert_one_line_error(taskq(target, "jobs", "stats", check=False), "taskq migrate")


def test_unreadable_dsn_file(sqlite_target: StoreTarget, tmp_path) -> None:
    env = sqlite_target.env | {"TASKQ_DSN_FILE": str(tmp_path / "missing")}
    assert_one_line_error(taskq(None, "jobs", "stats", env=env, check=False), "TASKQ_DSN_FILE")


async def _make_dead(target: StoreTarget, count: int) -> list[str]:
    """Enqueue ``count`` jobs on queue ``q`` and finish them as dead/failed, as a worker would."""
    from taskq.client import AsyncClient
    from taskq.ids import uuid7
    from taskq.jobs import Outcome, OutcomeKind

    async with AsyncClient(target.dsn, schema=target.schema) as client:
        ids = await client.enqueue_many("doomed", [((n,), {}) for n in range(count)], queue="q")
        worker = uuid7()
        claimed = (await client.store.claim(worker, ["q"], count, 30.0)).jobs
        await client.store.complete(
            worker,
            [
                Outcome(
                    c.id, c.attempt, OutcomeKind.DEAD, error="ValueError: no", dead_reason="failed"
                )
                for c in claimed
            ],
        )
    return [str(i) for i in ids]


async def test_list_filters_and_retry_all_dead(migrated: StoreTarget) -> None:
    dead = await _make_dead(migrated, 3)
    taskq(migrated, "enqueue", "other", "--queue", "elsewhere")
    listed = json.loads(taskq(migrated, "jobs", "list", "--state", "dead", "--json").stdout)
    assert sorted(j["id"] for j in listed) == sorted(dead)
    assert all(j["dead_reason"] == "failed" and j["last_error"] == "ValueError: no" for j in listed)
    limited = json.loads(
        taskq(migrated, "jobs", "list", "--queue", "q", "--limit", "2", "--json").stdout
    )
    assert len(limited) == 2 and {j["queue"] for j in limited} == {"q"}
    human = taskq(migrated, "jobs", "list", "--state", "dead").stdout
    assert all(job_id in human for job_id in dead) and "failed" in human
    out = taskq(migrated, "jobs", "retry", "--all-dead")
    assert out.stdout.strip() == "re-queued 3 dead job(s)"
    stats = json.loads(taskq(migrated, "jobs", "stats", "--json").stdout)
    assert stats["queued"] == 4 and stats["dead"] == 0
    again = json.loads(taskq(migrated, "jobs", "show", dead[0], "--json").stdout)
    assert again["attempts"] == 0 and again["dead_reason"] is None


def test_retry_needs_ids_or_all_dead(migrated: StoreTarget) -> None:
    nothing = taskq(migrated, "jobs", "retry", check=False)
    assert_one_line_error(nothing, "one of the arguments ID --all-dead is required")
    assert nothing.returncode == 2  # a usage error, like every other bad command line
    both = taskq(migrated, "jobs", "retry", "--all-dead", str(uuid.uuid4()), check=False)
    assert_one_line_error(both, "not allowed with")
    assert both.returncode == 2


async def test_retry_a_queued_job_is_refused_but_others_proceed(migrated: StoreTarget) -> None:
    (dead,) = await _make_dead(migrated, 1)
    queued = taskq(migrated, "enqueue", "a", "--queue", "default").stdout.strip()
    proc = taskq(migrated, "jobs", "retry", queued, dead, check=False)
    assert proc.returncode == 1
    assert_one_line_error(proc, "only dead or cancelled jobs can be retried")
    assert f"re-queued {dead}" in proc.stdout


@pytest.mark.parametrize(
    ("value", "fragment"), [("-1", "expected an integer >= 0"), ("lots", "expected an integer")]
)
def test_bad_prefetch(sqlite_target: StoreTarget, value: str, fragment: str) -> None:
    proc = taskq(sqlite_target, "worker", "--actors", "x:y", "--prefetch", value, check=False)
    assert proc.returncode == 2
    assert_one_line_error(proc, fragment)
