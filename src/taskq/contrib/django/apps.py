"""The Django app (``"taskq.contrib.django"`` in ``INSTALLED_APPS``): a system check of
``settings.TASKQ`` (``taskq.E001``), and taskq's migrations run by ``manage.py migrate``
on the ``DATABASE`` alias (``post_migrate``; off with ``MIGRATE = False``), so the test
runner's test database gets taskq's tables too."""

from __future__ import annotations

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
