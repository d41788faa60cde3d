"""What the ``taskq_*`` management commands share: the process's environment for
taskq (the DSN of the Django database, the schema, the project on children's
``PYTHONPATH``), and running a taskq entry point the way ``taskq`` runs it (logs
configured; a taskq error is one ``taskq:`` line on stderr and exit 1; its exit code)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from ....exceptions import TaskqError
from ..conf import TaskqSettings


def run_taskq(main: Callable[[], int]) -> None:
    """Run ``main``; leave with its exit code when not 0."""
    from .... import exit_codes, logs

    try:
        logs.configure()
        code = main()
    except TaskqError as exc:
        print(f"taskq: {exc}", file=sys.stderr, flush=True)
        code = exit_codes.ERROR
    except KeyboardInterrupt:
        print("taskq: interrupted", file=sys.stderr, flush=True)
        code = 130
    if code:
        sys.exit(code)


def export_store(settings: TaskqSettings) -> str:
    """Put the store of ``settings`` in this process's environment, for the processes it
    starts (a workgroup's children): ``TASKQ_DSN``, ``TASKQ_SCHEMA``; and the project's
    directory on ``PYTHONPATH`` (the children import its settings and apps). Returns the
    DSN."""
    from ..db import dsn as dsn_of

    dsn = dsn_of(settings.database)
    for name in ("TASKQ_DSN_FILE", "TASKQ_PG_DSN", "TASKQ_SCHEMA_NAME"):
        os.environ.pop(name, None)  # the Django database is the store, not these
    os.environ["TASKQ_DSN"] = dsn
    if settings.schema:
        os.environ["TASKQ_SCHEMA"] = settings.schema
    project = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv[0] else os.getcwd()
    paths = [project, *(p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p)]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    return dsn
