"""``manage.py taskq_migrate``: ``taskq migrate`` on the Django database taskq uses."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from ... import conf
from ...db import migrate
from .. import run_taskq


class Command(BaseCommand):  # type: ignore[misc]  # Django has no type stubs here
    help = (
        "Create or upgrade taskq's tables in settings.TASKQ's DATABASE (manage.py migrate "
        "does it too unless MIGRATE is False); running it twice is a no-op."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        def main() -> int:
            settings = conf.load()
            applied = migrate(settings.database, settings.schema)
            self.stdout.write(
                f"applied migrations: {', '.join(applied)}" if applied else "schema is up to date"
            )
            return 0

        run_taskq(main)
