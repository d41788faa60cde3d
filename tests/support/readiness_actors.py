"""Actors for the readiness tests: a cpu_bound actor on queue ``cpu`` whose pool processes
start only once the file named by ``TASKQ_TEST_GATE`` exists (the registry's initializer
waits for it, at most a minute), and an async actor on queue ``io``.

A worker consuming ``cpu`` is therefore held in its start (the ``cpu-pool`` part) until
the test opens the gate; one consuming only ``io`` starts no pool at all.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from taskq import Registry


def wait_for_gate() -> None:
    gate = os.environ.get("TASKQ_TEST_GATE")
    deadline = time.monotonic() + 60
    while gate and not Path(gate).exists() and time.monotonic() < deadline:
        time.sleep(0.05)


registry = Registry(initializer=wait_for_gate)


@registry.actor(queue="cpu", cpu_bound=True)
def crunch(x: int) -> int:
    return x * x


@registry.actor(queue="io")
async def fetch(key: str) -> str:
    return key
