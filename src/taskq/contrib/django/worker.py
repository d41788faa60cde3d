"""``manage.py taskq_worker``'s flags: every ``taskq worker`` flag (the same parser,
``taskq.cli.workgroup.add_worker_flags``), with defaults from ``settings.TASKQ['WORKER']``
(flags given on the command line win), the store of the Django database, and Django's
connection hygiene (``CloseOldConnections``) added to the middleware."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any, NoReturn

from ...cli.workgroup import add_worker_flags, worker_config
from ...exceptions import ConfigError
from ...worker.config import WorkerConfig
from .conf import REGISTRY, TaskqSettings
from .middleware import REFERENCE as HYGIENE


class _SettingsParser(argparse.ArgumentParser):
    """Parses ``WORKER`` as flags; a bad one is a ``ConfigError`` naming the setting."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"settings.TASKQ['WORKER']: {message}")


def _flags(worker: Mapping[str, Any], parser: argparse.ArgumentParser) -> list[str]:
    """``{"max_concurrency": 8, "queues": ["a"]}`` -> ``["--max-concurrency", "8", ...]``."""
    actions = {opt: action for action in parser._actions for opt in action.option_strings}
    argv: list[str] = []
    for key, value in worker.items():
        flag = "--" + str(key).replace("_", "-")
        action = actions.get(flag)
        if action is None or key in ("actors", "help"):
            known = sorted(
                a.dest
                for a in parser._actions
                if a.option_strings and a.dest not in ("actors", "help")
            )
            raise ConfigError(
                f"settings.TASKQ['WORKER'] has no worker option {key!r} (ACTORS is its own "
                f"setting); the options are {', '.join(known)}"
            )
        if value is None or value is False:
            continue
        if value is True:
            argv.append(flag)
        elif isinstance(action, argparse._AppendAction) and isinstance(value, list | tuple):
            for item in value:
                argv += [flag, str(item)]
        elif isinstance(value, list | tuple):
            argv += [flag, ",".join(map(str, value))]
        else:
            argv += [flag, str(value)]
    return argv


def settings_defaults(settings: TaskqSettings) -> dict[str, Any]:
    """The worker options ``WORKER`` sets, checked as flags: {argparse dest: value}."""
    parser = _SettingsParser(add_help=False)
    add_worker_flags(parser, actors_default=REGISTRY)
    parsed = vars(parser.parse_args(_flags(settings.worker, parser)))
    given = {str(k).replace("-", "_") for k in settings.worker}
    return {dest: value for dest, value in parsed.items() if dest in given}


def add_flags(parser: argparse.ArgumentParser) -> None:
    add_worker_flags(parser, actors_default=REGISTRY)


def config(options: Mapping[str, Any], settings: TaskqSettings) -> WorkerConfig:
    """The ``WorkerConfig`` of parsed flags, on the Django database, with the hygiene."""
    from .db import dsn

    ns = argparse.Namespace(**options)
    ns.dsn, ns.schema = dsn(settings.database), settings.schema
    ns.middleware = list(dict.fromkeys([HYGIENE, *ns.middleware]))
    return worker_config(ns)
