"""The ``taskq`` command: the parser, and ``main`` (the console entry point).

One module a command family (:mod:`.jobs`, :mod:`.queues`, :mod:`.workgroup`,
:mod:`.workflows`, :mod:`.admin`); each adds its subcommands' parsers and names the function
that runs them (``run``). :mod:`.args` holds the flag types, :mod:`.output` what gets printed.

Every subcommand maps user mistakes (bad JSON, unknown job id, unreachable database, bad
DSN, bad schema name, bad flags) to one line on stderr and a non-zero exit; tracebacks
are for taskq's own bugs only.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from .. import __version__, logs
from ..exceptions import TaskqError
from . import admin, jobs, queues, workflows, workgroup
from .args import Parser, Subparsers, subcommands
from .output import EXIT_BROKEN_PIPE, EXIT_ERROR, error

__all__ = ["build_parser", "main"]


#: every command, by name, with the function that adds its parser (``taskq --help`` order)
COMMANDS: dict[str, Callable[[Subparsers], None]] = {
    "migrate": admin.add_migrate,
    "worker": workgroup.add_worker,
    "workgroup": workgroup.add_workgroup,
    "enqueue": jobs.add_enqueue,
    "jobs": jobs.add_jobs,
    "queues": queues.add_queues,
    "actors": queues.add_actors,
    "workers": workgroup.add_workers,
    "workflows": workflows.add_workflows,
    "schedules": admin.add_schedules,
    "demo": admin.add_demo,
    "dashboard": admin.add_dashboard,
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or only of ``command``: a command line that starts
    with a command's name needs no other (and a worker's start-up does not build them)."""
    parser = Parser(
        prog="taskq", description="Background jobs where workers die and nothing is lost or silent."
    )
    parser.add_argument(
        "--dsn", help="store DSN (default: TASKQ_DSN_FILE, TASKQ_DSN, sqlite:///taskq.sqlite3)"
    )
    parser.add_argument("--schema", help="Postgres schema (default: TASKQ_SCHEMA or taskq)")
    parser.add_argument("--version", action="version", version=f"taskq {__version__}")
    sub = subcommands(parser, "command", "COMMAND", required=True)
    for name, add in COMMANDS.items():
        if command is None or name == command:
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
    words = sys.argv[1:] if argv is None else list(argv)
    ns = build_parser(words[0] if words and words[0] in COMMANDS else None).parse_args(words)
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
