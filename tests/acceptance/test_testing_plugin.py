"""taskq.testing in a user's own project: a fresh ``pytest`` process on an application
that knows nothing of this suite. The plugin comes from the ``pytest11`` entry point, the
registry from the ``taskq_actors`` ini option, the store from ``TASKQ_TESTING_DSN``
(Postgres: a schema per test, dropped after) or a SQLite file per test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

TASKS = """
import taskq

registry = taskq.Registry()
sent = []


@registry.actor(queue="mail")
def send_welcome(address: str) -> None:
    sent.append(address)


@registry.actor(queue="billing", max_attempts=2)
def charge(cents: int) -> None:
    raise RuntimeError("card declined")
"""

SIGNUP = """
import taskq

from .tasks import charge, send_welcome


def signup(address: str) -> None:
    with taskq.Client() as client:  # the app's own client: TASKQ_DSN from the environment
        client.enqueue(send_welcome, address)
        client.enqueue(charge, 990)
"""

TEST_SIGNUP = """
from taskq.testing import assert_enqueued, assert_not_enqueued, drain

from myapp import tasks
from myapp.signup import signup


def test_signup_enqueues_the_welcome_mail(taskq_client):
    signup("ada@example.com")
    assert_enqueued(tasks.send_welcome, args=["ada@example.com"], queue="mail")
    assert_enqueued(tasks.charge, kwargs={}, args=[990])
    assert_not_enqueued(tasks.send_welcome, args=["bob@example.com"])


def test_drain_sends_it_and_a_declined_card_ends_dead(taskq_client):
    signup("ada@example.com")
    runs = drain(taskq_client)
    assert tasks.sent == ["ada@example.com"]
    assert [(r.actor, r.outcome) for r in runs] == [
        ("charge", "retry"), ("send_welcome", "succeeded"), ("charge", "dead"),
    ] or [(r.actor, r.outcome) for r in runs] == [
        ("send_welcome", "succeeded"), ("charge", "retry"), ("charge", "dead"),
    ]
    assert runs[-1].dead_reason == "failed"


def test_each_test_starts_empty(taskq_client):
    assert taskq_client.stats()["queued"] == 0
    assert drain(taskq_client, queue="mail") == []
"""

PYTEST_INI = """
[pytest]
taskq_actors = myapp.tasks:registry
filterwarnings = error
"""


def _project(root: Path) -> None:
    (root / "myapp").mkdir()
    (root / "myapp" / "__init__.py").write_text("")
    (root / "myapp" / "tasks.py").write_text(textwrap.dedent(TASKS))
    (root / "myapp" / "signup.py").write_text(textwrap.dedent(SIGNUP))
    (root / "tests").mkdir()
    (root / "tests" / "test_signup.py").write_text(textwrap.dedent(TEST_SIGNUP))
    (root / "pytest.ini").write_text(PYTEST_INI)


def _run_users_pytest(root: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TASKQ_", "PYTEST_"))}
    env.update(env_extra, PYTHONPATH=str(root))
    plugins_off = ["-p", "no:cacheprovider", "-p", "no:asyncio"]  # ours, not the user's
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--tb=short", *plugins_off, "tests"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_users_suite_on_an_embedded_sqlite_store(tmp_path: Path) -> None:
    _project(tmp_path)
    done = _run_users_pytest(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    assert list(tmp_path.glob("*.sqlite3")) == []  # the stores lived in pytest's tmp dirs


def test_a_users_suite_on_their_postgres(tmp_path: Path, pg_dsn: str) -> None:
    _project(tmp_path)
    done = _run_users_pytest(tmp_path, {"TASKQ_TESTING_DSN": pg_dsn})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 passed" in done.stdout
    with psycopg.connect(pg_dsn) as conn:
        left = conn.execute(
            "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'taskq_test_%%'"
        ).fetchone()
    assert left is not None and left[0] == 0, "the per-test schemas were not dropped"


def test_a_failed_assertion_names_what_was_there(tmp_path: Path) -> None:
    _project(tmp_path)
    (tmp_path / "tests" / "test_wrong.py").write_text(
        textwrap.dedent("""
        from taskq.testing import assert_enqueued
        from myapp import tasks
        from myapp.signup import signup

        def test_wrong_address(taskq_client):
            signup("ada@example.com")
            assert_enqueued(tasks.send_welcome, args=["bob@example.com"])
        """)
    )
    done = _run_users_pytest(tmp_path, {})
    assert done.returncode == 1
    assert "1 failed, 3 passed" in done.stdout
    assert "args=['bob@example.com'], state='queued'; found 0" in done.stdout, done.stdout
    assert "taskq/testing" not in done.stdout  # the helper's own frames are hidden
    assert "mail/queued args=['ada@example.com']" in done.stdout, done.stdout


pytestmark = pytest.mark.slow
