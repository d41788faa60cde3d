"""The ``taskq`` command: the parser, and ``main`` (the console entry point).

One module a command family (:mod:`.jobs`, :mod:`.queues`, :mod:`.workgroup`,
:mod:`.admin`); each adds its subcommands' parsers and names the function that runs them
(``run``). :mod:`.args` holds the flag types, :mod:`.output` what gets printed.

Every subcommand maps user mistakes (bad JSON, unknown job id, unreachable database, bad
DSN, bad schema name, bad flags) to one line on stderr and a non-zero exit; tracebacks
are for taskq's own bugs only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from .. import __version__, logs
from ..exceptions import TaskqError
from . import admin, jobs, queues, workgroup
from .args import Parser, subcommands
from .output import EXIT_BROKEN_PIPE, EXIT_ERROR, error

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="taskq", description="Background jobs where workers die and nothing is lost or silent."
    )
    parser.add_argument(
        "--dsn", help="store DSN (default: TASKQ_DSN_FILE, TASKQ_DSN, sqlite:///taskq.sqlite3)"
    )
    parser.add_argument("--schema", help="Postgres schema (default: TASKQ_SCHEMA or taskq)")
    parser.add_argument("--version", action="version", version=f"taskq {__version__}")
    sub = subcommands(parser, "command", "COMMAND", required=True)
    for add in (
        admin.add_migrate,
        workgroup.add_worker,
        workgroup.add_workgroup,
        jobs.add_enqueue,
        jobs.add_jobs,
        queues.add_queues,
        queues.add_actors,
        workgroup.add_workers,
        admin.add_schedules,
        admin.add_demo,
        admin.add_dashboard,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # here, not at exit: a closed pipe is handled like the others
    except BrokenPipeError:
        # `taskq jobs list | head -1`: the reader has all it wanted. Exit quietly with the
        # status a shell gives a process SIGPIPE ended, and point stdout at /dev/null so
        # the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    return code


def _main(argv: Sequence[str] | None) -> int:
    ns = build_parser().parse_args(argv)
    if ns.command in ("worker", "workgroup") and "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # `--actors myapp.tasks:registry` from the app's directory
    try:
        logs.configure()  # a bad TASKQ_LOG_LEVEL / TASKQ_LOG_FORMAT is one `taskq:` line
        code: int = ns.run(ns)
        return code
    except TaskqError as exc:
        error(exc)
        return EXIT_ERROR
    except KeyboardInterrupt:
        error("interrupted")
        return 130
