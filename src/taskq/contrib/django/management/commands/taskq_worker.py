"""``manage.py taskq_worker [taskq worker flags]``: a worker for the project's registry
on the Django database; ``settings.TASKQ['WORKER']`` gives the flags' defaults."""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from taskq.exceptions import TaskqError

from ... import conf, worker
from .. import run_taskq


class Command(BaseCommand):  # type: ignore[misc]  # Django has no type stubs here
    help = (
        "Run a taskq worker for this project: every `taskq worker` flag (docs/worker.md), "
        "defaults from settings.TASKQ['WORKER'], the store in settings.TASKQ's DATABASE."
    )

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        self._settings_error: TaskqError | None = None
        try:  # settings.TASKQ['WORKER'] as the flags' defaults; a bad one is said in handle
            parser.set_defaults(**worker.settings_defaults(conf.load()))
        except TaskqError as exc:
            self._settings_error = exc
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        worker.add_flags(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        from taskq.worker.main import run

        def main() -> int:
            if self._settings_error is not None:
                raise self._settings_error
            settings = conf.load()
            from ... import actors  # noqa: F401  # the registry loads, or one clear line

            return run(worker.config(options, settings))

        run_taskq(main)
