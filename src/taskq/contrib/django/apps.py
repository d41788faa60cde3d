"""The Django app (``"taskq.contrib.django"`` in ``INSTALLED_APPS``): a system check of
``settings.TASKQ`` (``taskq.E001``), and taskq's migrations run by ``manage.py migrate``
on the ``DATABASE`` alias (``post_migrate``; off with ``MIGRATE = False``), so the test
runner's test database gets taskq's tables too. Before the test runner drops that test
database, the process's ``client()`` connections to it are closed (Postgres refuses to
drop a database others are connected to)."""

from __future__ import annotations

import functools
import sys
from typing import Any

from django.apps import AppConfig
from django.core import checks
from django.db.models.signals import post_migrate

from ...exceptions import TaskqError


class TaskqConfig(AppConfig):  # type: ignore[misc]  # Django has no type stubs here
    name = "taskq.contrib.django"
    label = "taskq"
    verbose_name = "taskq"

    def ready(self) -> None:
        checks.register(check_settings)
        post_migrate.connect(migrate_with_django, sender=self, dispatch_uid="taskq-migrate")
        close_clients_before_the_test_database_goes()


def close_clients_before_the_test_database_goes() -> None:
    """``client()``'s connections to the test database are closed before the test runner
    drops it: the ``DATABASE`` connection's ``creation.destroy_test_db`` (of this thread,
    the runner's) closes them first."""
    from django.db import connections

    from . import conf
    from .clients import close

    try:
        alias = conf.load().database
        creation = connections[alias].creation
    except Exception:  # a bad setting is the system check's to report
        return
    destroy = creation.destroy_test_db
    if getattr(destroy, "closes_taskq_clients", False):
        return

    @functools.wraps(destroy)
    def closing_first(*args: Any, **kwargs: Any) -> Any:
        close()
        return destroy(*args, **kwargs)

    closing_first.closes_taskq_clients = True  # type: ignore[attr-defined]
    creation.destroy_test_db = closing_first


def check_settings(**kwargs: Any) -> list[checks.CheckMessage]:
    """``settings.TASKQ`` is well formed (``manage.py check`` and every command)."""
    from . import conf, worker

    try:
        worker.settings_defaults(conf.load())
    except TaskqError as exc:
        return [checks.Error(str(exc), id="taskq.E001")]
    return []


def migrate_with_django(sender: AppConfig, using: str, verbosity: int = 1, **kwargs: Any) -> None:
    """After ``manage.py migrate --database using``: taskq's migrations on that database
    when it is taskq's (``DATABASE``) and ``MIGRATE`` is on."""
    from . import conf
    from .db import migrate

    settings = conf.load()
    if not settings.migrate or using != settings.database:
        return
    applied = migrate(using, settings.schema)
    if verbosity >= 1:
        out = kwargs.get("stdout") or sys.stdout
        done = f"applied migrations: {', '.join(applied)}" if applied else "schema is up to date"
        out.write(f"  taskq: {done}\n")
