"""The actor of test_worker_startup: its body writes the names of every module the worker
process has loaded by then (one per line) to TASKQ_TEST_MODULES. Imports nothing but
taskq, so that what the worker loads is what is recorded."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import taskq

registry = taskq.Registry()


@registry.actor(queue="startup")
async def loaded_modules() -> None:
    path = Path(os.environ["TASKQ_TEST_MODULES"])
    partial = path.with_suffix(".tmp")
    partial.write_text("\n".join(sorted(sys.modules)) + "\n")
    partial.replace(path)  # whole or absent
