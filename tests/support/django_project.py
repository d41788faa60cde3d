"""A real Django project for the tests of ``taskq.contrib.django``: made by
``django-admin startproject`` in a temporary folder, with an app ``shop`` (a model and a
``tasks`` module), on a test's store (SQLite file or a fresh Postgres schema); its
``manage.py`` commands run as real processes."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from tests.support.helpers import wait_until

BIN = Path(sys.executable).parent

MODELS = """
from django.db import models


class Order(models.Model):
    note = models.CharField(max_length=100)
"""

TASKS = '''
import os

from django.db import connection

import taskq

from shop.models import Order

registry = taskq.Registry()


@registry.actor
def receipt(order_id: int) -> str:
    """Reads the order through the ORM, on the worker thread's Django connection."""
    return Order.objects.get(id=order_id).note


@registry.actor(cpu_bound=True, max_attempts=1)
def count_in_pool(note: str) -> list:
    """In a CPU pool process: the ORM works there too (Django set up by the registry)."""
    return [Order.objects.filter(note=note).count(), os.getpid()]


@registry.actor(max_attempts=1)
def backend() -> list:
    """The Django connection this job used: [backend pid or file, thread]."""
    import threading

    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT pg_backend_pid()")
            which = cursor.fetchone()[0]
        else:
            cursor.execute("SELECT count(*) FROM shop_order")
            which = cursor.fetchone()[0]
    return [which, threading.current_thread().name]
'''


def postgres_database(dsn: str) -> dict[str, Any]:
    """A ``DATABASES`` entry for the Postgres of ``dsn``."""
    params = conninfo_to_dict(dsn)
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": params.get("dbname", ""),
        "USER": params.get("user", ""),
        "PASSWORD": params.get("password", ""),
        "HOST": params.get("host", ""),
        "PORT": params.get("port", ""),
    }


class DjangoProject:
    """``startproject`` + app ``shop`` + ``taskq.contrib.django`` on ``kind``'s store."""

    def __init__(
        self,
        root: Path,
        kind: str,
        pg_dsn: str | None = None,
        *,
        taskq: Mapping[str, Any] | None = None,
        database: Mapping[str, Any] | None = None,
    ) -> None:
        self.root, self.kind = root, kind
        self.token = secrets.token_hex(5)
        self.schema = f"taskq_dj_{self.token}"
        self.app_schema = f"app_dj_{self.token}"  # Django's own tables (Postgres)
        self.application_name = f"taskq-django-{self.token}"
        self.pg_dsn = pg_dsn
        self._procs: list[LogProcess] = []
        run([str(BIN / "django-admin"), "startproject", "site_", str(root)], cwd=root)
        self.manage(["startapp", "shop"])
        (root / "shop" / "models.py").write_text(MODELS)
        (root / "shop" / "tasks.py").write_text(TASKS)
        db = dict(database or {})
        if kind == "postgres":
            assert pg_dsn is not None
            with psycopg.connect(pg_dsn, autocommit=True) as conn:
                conn.execute(f'CREATE SCHEMA "{self.app_schema}"')
            db = {
                **postgres_database(pg_dsn),
                "OPTIONS": {
                    "options": f"-c search_path={self.app_schema}",
                    "application_name": self.application_name,
                },
                "TEST": {"NAME": f"test_dj_{self.token}"},  # never another run's
                **db,
            }
        else:
            db = {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": str(root / "db.sqlite3"),
                "TEST": {"NAME": str(root / "test.sqlite3")},
                **db,
            }
        settings = {"SCHEMA": self.schema, **(taskq or {})}
        with open(root / "site_" / "settings.py", "a") as f:
            f.write(
                textwrap.dedent(
                    f"""
                    INSTALLED_APPS += ["shop", "taskq.contrib.django"]
                    DATABASES = {{"default": {db!r}}}
                    TASKQ = {settings!r}
                    """
                )
            )

    @property
    def store_dsn(self) -> str:
        """The DSN the test's own client uses (no application_name of the project's)."""
        if self.kind == "postgres":
            assert self.pg_dsn is not None
            return self.pg_dsn
        return f"sqlite:///{self.root / 'db.sqlite3'}"

    @property
    def env(self) -> dict[str, str]:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("TASKQ_", "DJANGO_")) or k == "TASKQ_TEST_PG_DSN"
        }
        env["TASKQ_LOG_FORMAT"] = "json"
        env["PYTHONPATH"] = str(self.root)
        return env

    def manage(
        self, args: list[str], *, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        return run(
            [sys.executable, "manage.py", *args],
            cwd=self.root,
            env=self.env,
            check=check,
            timeout=timeout,
        )

    def shell(self, code: str) -> Any:
        """Run ``code`` in ``manage.py shell`` (a Django process); its last stdout line,
        as JSON."""
        done = self.manage(["shell", "-c", textwrap.dedent(code)])
        return json.loads(done.stdout.strip().splitlines()[-1])

    def start(self, args: list[str], log: Path) -> LogProcess:
        """``manage.py ARGS`` in the background (a worker, a workgroup)."""
        return self.start_process(["manage.py", *args], log)

    def start_process(
        self, args: list[str], log: Path, env: Mapping[str, str] | None = None
    ) -> LogProcess:
        """``python ARGS`` in the project's folder, in the background."""
        proc = LogProcess(
            [sys.executable, *args], cwd=self.root, env=dict(env or self.env), log=log
        )
        self._procs.append(proc)
        return proc

    def terminate_backends(self) -> int:
        """A Postgres restart, as this project sees it: every connection it opened (its
        application_name) is ended by the server."""
        assert self.pg_dsn is not None
        with psycopg.connect(self.pg_dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s",
                [self.application_name],
            ).fetchall()
        return len(rows)

    def close(self) -> None:
        for proc in self._procs:
            proc.stop(signal.SIGKILL, timeout=10)  # a no-op for the ones already stopped
        if self.kind == "postgres":
            assert self.pg_dsn is not None
            with psycopg.connect(self.pg_dsn, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.app_schema}" CASCADE')
                conn.execute(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def run(
    argv: list[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"{argv} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")
    return done


class LogProcess:
    """A process whose stdout and stderr (JSON log lines) go to a file."""

    def __init__(self, argv: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = open(log, "wb")  # closed in wait()
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    def events(self, name: str) -> list[dict[str, Any]]:
        out = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and event.get("event") == name:
                    out.append(event)
        return out

    def wait_for_event(self, name: str, timeout: float = 60.0, count: int = 1) -> dict[str, Any]:
        def seen() -> dict[str, Any] | None:
            found = self.events(name)
            if len(found) < count and self.proc.poll() is not None:
                raise AssertionError(
                    f"{self.proc.args} exited ({self.proc.returncode}) before {name!r}:\n"
                    + self.log_path.read_text()
                )
            return found[count - 1] if len(found) >= count else None

        return wait_until(seen, timeout=timeout, what=f"log event {name!r}")

    def stop(self, sig: int, timeout: float = 60.0) -> int:
        """Signal it (unless it has exited) and wait; its exit code."""
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(sig)
            return self.proc.wait(timeout)
        finally:
            self._log.close()


@contextlib.contextmanager
def project(root: Path, kind: str, pg_dsn: str | None, **kwargs: Any) -> Iterator[DjangoProject]:
    made = DjangoProject(root, kind, pg_dsn, **kwargs)
    try:
        yield made
    finally:
        made.close()
