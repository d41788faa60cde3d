"""``manage.py taskq_workgroup start|validate FILE.toml``: ``taskq workgroup`` for the
project: its children serve the project's registry (when the file names no ``actors``)
on the Django database, with Django's connection hygiene (``CloseOldConnections``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from django.core.management.base import BaseCommand

from ... import conf
from ...conf import REGISTRY
from ...middleware import REFERENCE as HYGIENE
from .. import export_store, run_taskq


class Command(BaseCommand):  # type: ignore[misc]  # Django has no type stubs here
    help = (
        "Supervise taskq worker processes from a workgroup TOML file (docs/workgroups.md); "
        "`actors` defaults to the project's registry, the store is settings.TASKQ's DATABASE."
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("action", choices=("start", "validate"))
        parser.add_argument("file", metavar="FILE.toml")

    def handle(self, *args: Any, **options: Any) -> None:
        from taskq import workgroup
        from taskq.worker.main import MIDDLEWARE_ENV

        def main() -> int:
            settings = conf.load()
            export_store(settings)
            extra = [m for m in os.environ.get(MIDDLEWARE_ENV, "").split(",") if m.strip()]
            os.environ[MIDDLEWARE_ENV] = ",".join(dict.fromkeys([HYGIENE, *extra]))
            run = (
                workgroup.validate_main if options["action"] == "validate" else workgroup.start_main
            )
            return run(options["file"], actors_default=REGISTRY)

        run_taskq(main)
