"""No password in anything taskq prints, whatever form the DSN has: a real worker's
``worker-started`` and ``job-dead`` lines, a real workgroup's ``workgroup-store-opened``,
the CLI's error lines and ``taskq jobs show``. (The dashboard's pages:
tests/integration/test_dashboard.py.) Postgres runs with trust auth here, so a
``?password=`` DSN still connects: the password is only there to be hidden."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from taskq import Client
from tests.support import dashboard_actors as actors
from tests.support.worker_harness import WorkerProcess
from tests.support.workgroup_harness import Workgroup, run_cli, write_config

pytestmark = pytest.mark.slow

SECRET = "hunter2-never-shown"


def with_password(dsn: str) -> str:
    return dsn + ("&" if "?" in dsn else "?") + f"password={SECRET}"


def test_worker_started_and_job_dead_lines_hide_passwords(pg_target, tmp_path: Path) -> None:
    dsn = with_password(pg_target.dsn)
    env = {**pg_target.env, "TASKQ_DSN": dsn}
    assert run_cli("migrate", env=env).returncode == 0
    with Client(dsn, schema=pg_target.schema) as client:
        job_id = client.enqueue(actors.load_report, "/r.csv")  # its error holds a DSN password
    worker = WorkerProcess(
        pg_target,
        "--actors",
        "tests.support.dashboard_actors:registry",
        "--queues",
        "reports",
        env=env,
        log_path=tmp_path / "worker.log",
    )
    try:
        started = worker.wait_for_event("worker-started")
        dead = worker.wait_for_event("job-dead", timeout=60)
    finally:
        worker.stop()
    assert started["store"].endswith("password=***")
    assert dead["job"] == str(job_id) and "postgresql://app:***@db/prod" in dead["error"]
    log = worker.log_path.read_text()
    assert SECRET not in log and "hunter2" not in log


def test_workgroup_store_opened_hides_the_password(pg_target, tmp_path: Path) -> None:
    dsn = with_password(pg_target.dsn)
    env = {**pg_target.env, "TASKQ_DSN": dsn}
    assert run_cli("migrate", env=env).returncode == 0
    config = write_config(
        tmp_path / "wg.toml",
        '[[workers]]\nname = "w"\nqueues = ["default"]\n',
        actors="tests.support.dashboard_actors:registry",
    )
    group = Workgroup(config, env)
    try:
        (opened,) = group.wait_event("workgroup-store-opened")
        group.wait_event("worker-started")
    finally:
        group.cleanup()
    assert opened["dsn"].endswith("password=***")
    assert SECRET not in json.dumps(group.snapshot())


@pytest.mark.parametrize(
    "dsn",
    [
        f"host=127.0.0.1 port=1 password={SECRET} user=u",
        f"host=127.0.0.1 password='{SECRET} x' bogus=1",
        f"postgresql://u:{SECRET}@127.0.0.1:1/db",
        f"postgresql://u@127.0.0.1:1/db?password={SECRET}",
        f"postgresql://u:{SECRET}@[::1/db",
        f"postgresql://u:{SECRET}@127.0.0.1:1/db?bogus=1",
    ],
)
def test_cli_error_lines_hide_the_password_of_any_dsn_form(dsn: str, tmp_path: Path) -> None:
    done = run_cli("jobs", "stats", env={"TASKQ_DSN": dsn, "HOME": str(tmp_path)})
    assert done.returncode != 0
    assert done.stderr.startswith("taskq: ") and len(done.stderr.splitlines()) == 1
    assert SECRET not in done.stderr and SECRET not in done.stdout


def test_jobs_show_masks_what_the_dashboard_masks(target) -> None:
    assert run_cli("migrate", env=target.env).returncode == 0
    with Client(target.dsn, schema=target.schema) as client:
        by_name = client.enqueue_with(
            actors.charge, ["4111-1111"], {"amount": 5, "api_token": SECRET}
        )
        by_meta = client.enqueue_with(actors.add, [SECRET, 1], meta={"sensitive": True})
        by_list = client.enqueue_with(
            actors.charge, [], {"card": SECRET, "amount": 1}, meta={"sensitive": ["card"]}
        )
    for job_id in (by_name, by_meta, by_list):
        for extra in ((), ("--json",)):
            shown = run_cli("jobs", "show", str(job_id), *extra, env=target.env)
            assert shown.returncode == 0, shown.stderr
            assert SECRET not in shown.stdout and "••••••" in shown.stdout
    listed = run_cli("jobs", "list", "--json", env=target.env)
    assert listed.returncode == 0 and SECRET not in listed.stdout
