"""``taskq.contrib.django`` on a real Django project (``startproject`` in a temporary
folder, real ``manage.py`` processes), on SQLite and Postgres: ``manage.py migrate``
makes taskq's tables, ``taskq_worker`` serves the apps' ``tasks`` modules with the
settings' and the command line's flags, ``client()`` joins ``atomic()`` blocks, and a
database restart between two jobs leaves no broken connection behind."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from taskq import Client, JobNotFound
from tests.support.django_project import DjangoProject, project

pytestmark = pytest.mark.slow

ENQUEUE = """
    import json
    from django.db import transaction
    from taskq.contrib.django import client
    from shop.models import Order
    from shop.tasks import receipt

    c = client()
    ids = {}
    with transaction.atomic():
        order = Order.objects.create(note="kept")
        ids["kept"] = str(c.enqueue(receipt, order.id))
        try:
            with transaction.atomic():  # a savepoint, rolled back: its job goes with it
                ids["savepoint"] = str(c.enqueue(receipt, order.id))
                raise RuntimeError
        except RuntimeError:
            pass
    try:
        with transaction.atomic():
            order = Order.objects.create(note="gone")
            ids["rolled_back"] = str(c.enqueue_with(receipt, [order.id]))
            raise RuntimeError
    except RuntimeError:
        pass
    try:
        with transaction.atomic():  # connection=None: taskq's own connection, at once
            ids["outside"] = str(c.enqueue_with(receipt, [0], connection=None))
            raise RuntimeError
    except RuntimeError:
        pass
    now = Order.objects.create(note="autocommit")
    ids["autocommit"] = str(c.enqueue(receipt, now.id))
    print(json.dumps(ids))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _pg(kind: str, request: pytest.FixtureRequest) -> str | None:
    return request.getfixturevalue("pg_dsn") if kind == "postgres" else None


def _client(proj: DjangoProject) -> Client:
    return Client(proj.store_dsn, schema=proj.schema)


def test_a_django_project_migrates_runs_its_apps_tasks_and_joins_atomic(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    settings = {"WORKER": {"max_concurrency": 4, "queues": ["default"], "poll_interval": 0.2}}
    with project(tmp_path, kind, _pg(kind, request), taskq=settings) as proj:
        proj.manage(["makemigrations", "shop"])
        migrated = proj.manage(["migrate"])
        assert "taskq: applied migrations: 0001_initial" in migrated.stdout, migrated.stdout
        assert proj.manage(["taskq_migrate"]).stdout.strip() == "schema is up to date"

        worker = proj.start(["taskq_worker", "--max-concurrency", "2"], tmp_path / "worker.log")
        started = worker.wait_for_event("worker-started")
        assert started["concurrency"] == 2  # the flag wins over WORKER's max_concurrency
        assert started["queues"] == ["default"]  # WORKER's queues
        assert started["actors"] == 3  # shop/tasks.py, found as an installed app's tasks

        ids = proj.shell(ENQUEUE)
        with _client(proj) as client:
            assert client.wait(ids["kept"]).result == "kept"  # read through the ORM
            assert client.wait(ids["autocommit"]).result == "autocommit"
            # a cpu_bound actor's pool process sets Django up through the registry too
            in_pool = client.wait(client.enqueue("count_in_pool", "kept"), timeout=90)
            assert in_pool.state == "succeeded" and in_pool.result[0] == 1, in_pool
            outside = client.wait(ids["outside"])  # written although its block rolled back
            assert outside.state == "dead" and "DoesNotExist" in (outside.last_error or "")
            for gone in ("savepoint", "rolled_back"):
                with pytest.raises(JobNotFound):
                    client.get(ids[gone])
        assert worker.stop(signal.SIGTERM) == 0


def test_a_database_restart_between_two_jobs_breaks_no_later_job(
    pg_dsn: str, tmp_path: Path
) -> None:
    """Every connection of the project is ended by the server between two jobs of the
    same worker thread (max_concurrency 1): the next job runs on a new connection, at its
    first attempt, with the default CONN_MAX_AGE and with persistent connections plus
    CONN_HEALTH_CHECKS (as Django's requests do)."""
    for name, database in (
        ("default", {}),
        ("persistent", {"CONN_MAX_AGE": None, "CONN_HEALTH_CHECKS": True}),
    ):
        root = tmp_path / name
        root.mkdir()
        with project(root, "postgres", pg_dsn, database=database) as proj:
            proj.manage(["makemigrations", "shop"])
            proj.manage(["migrate"])
            worker = proj.start(
                ["taskq_worker", "--max-concurrency", "1", "--poll-interval", "0.2"],
                root / "worker.log",
            )
            worker.wait_for_event("worker-started")
            with _client(proj) as client:
                first = client.wait(client.enqueue("backend")).result
                again = client.wait(client.enqueue("backend")).result
                if name == "persistent":
                    assert again == first  # the same connection: kept between jobs
                assert proj.terminate_backends() >= 1
                after = client.wait(client.enqueue("backend"), timeout=90)
                assert after.state == "succeeded" and after.attempts == 1, after
                assert after.result[1] == first[1]  # the same thread
                assert after.result[0] != first[0]  # on a new connection
            assert worker.stop(signal.SIGTERM) == 0


def test_without_the_hygiene_a_restart_leaves_the_thread_s_connection_broken(
    pg_dsn: str, tmp_path: Path
) -> None:
    """The control: a bare `taskq worker` on the project's registry, without
    CloseOldConnections, keeps its thread's dead Django connection after a restart (of
    the Django connections only here: the worker's own store is not the project's)."""
    with project(tmp_path, "postgres", pg_dsn) as proj:
        proj.manage(["makemigrations", "shop"])
        proj.manage(["migrate"])
        env = {
            **proj.env,
            "DJANGO_SETTINGS_MODULE": "site_.settings",
            "TASKQ_DSN": proj.store_dsn,
            "TASKQ_SCHEMA": proj.schema,
        }
        argv = ["-m", "taskq", "worker", "--actors", "taskq.contrib.django.actors:registry"]
        bare = proj.start_process(
            [*argv, "--max-concurrency", "1", "--poll-interval", "0.2"],
            tmp_path / "bare-worker.log",
            env=env,
        )
        bare.wait_for_event("worker-started")
        with _client(proj) as client:
            assert client.wait(client.enqueue("backend")).state == "succeeded"
            assert proj.terminate_backends() >= 1
            broken = client.wait(client.enqueue("backend"), timeout=90)
            assert broken.state == "dead", broken
            assert "connection" in (broken.last_error or ""), broken.last_error
        assert bare.stop(signal.SIGTERM) == 0


WORKGROUP = """
[supervisor]
shutdown_grace = 20.0

[[workers]]
name = "shop"
queues = ["default"]
poll_interval = 0.2
"""


def test_taskq_workgroup_serves_the_project_without_naming_its_actors(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The TOML names no `actors`: the children serve the project's registry (here the
    one settings.TASKQ['ACTORS'] names) on the Django database."""
    settings = {"ACTORS": "shop.tasks:registry"}
    with project(tmp_path, kind, _pg(kind, request), taskq=settings) as proj:
        proj.manage(["makemigrations", "shop"])
        proj.manage(["migrate"])
        (proj.root / "workgroup.toml").write_text(WORKGROUP)
        checked = proj.manage(["taskq_workgroup", "validate", "workgroup.toml"])
        assert "ok: workgroup.toml is valid" in checked.stdout, checked.stdout + checked.stderr
        group = proj.start(["taskq_workgroup", "start", "workgroup.toml"], tmp_path / "wg.log")
        ids = proj.shell(ENQUEUE)
        with _client(proj) as client:
            assert client.wait(ids["kept"], timeout=90).result == "kept"
        assert group.stop(signal.SIGTERM) == 0


def test_a_settings_mistake_is_one_clear_message(tmp_path: Path) -> None:
    with project(tmp_path, "sqlite", None, taskq={"WORKER": {"max_concurency": 2}}) as proj:
        done = proj.manage(["taskq_worker"], check=False)
        assert done.returncode != 0
        assert "taskq.E001" in done.stderr
        assert "settings.TASKQ['WORKER'] has no worker option 'max_concurency'" in done.stderr
        assert "Traceback" not in done.stderr
    root = tmp_path / "second"
    root.mkdir()
    with project(root, "sqlite", None, taskq={"WORKER": {"max_concurrency": 0}}) as proj:
        done = proj.manage(["taskq_worker"], check=False)
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert "settings.TASKQ['WORKER']: argument --max-concurrency" in done.stderr


RUNNER_TEST = """
from django.test import TransactionTestCase

from taskq.contrib.django import client
from taskq.testing import drain

from shop.models import Order
from shop.tasks import receipt, registry


class ReceiptTest(TransactionTestCase):
    def test_a_job_goes_to_the_test_database_and_runs_there(self):
        order = Order.objects.create(note="in the test database")
        jobs = client()
        job = jobs.enqueue(receipt, order.id)
        runs = [run for run in drain(jobs, registry=registry) if run.job_id == job]
        self.assertEqual([run.state for run in runs], ["succeeded"])
        self.assertEqual(jobs.get(job).result, "in the test database")
"""


def test_django_s_test_runner_gets_taskq_s_tables_in_its_test_database(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """`manage.py test` migrates its test database, taskq's tables included, and
    client() follows it there (the development database is never migrated here: an
    enqueue reaching it would fail)."""
    pg = _pg(kind, request)
    database = {} if pg is None else {"OPTIONS": {"application_name": "taskq-django-runner"}}
    with project(tmp_path, kind, pg, database=database) as proj:
        (proj.root / "shop" / "tests.py").write_text(RUNNER_TEST)
        proj.manage(["makemigrations", "shop"])
        done = proj.manage(["test", "shop", "--noinput", "-v", "2"], check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "taskq: applied migrations: 0001_initial" in done.stdout + done.stderr
        assert "Ran 1 test" in done.stderr and "OK" in done.stderr, done.stderr
