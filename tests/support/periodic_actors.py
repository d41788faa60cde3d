"""A registry with a periodic actor that ticks every second (the scheduler's acceptance
test runs it in real ``taskq worker`` processes), and a job that holds a worker in its
shutdown grace until the test releases it."""

from __future__ import annotations

import time
from pathlib import Path

from taskq import Registry
from tests.support.worker_actors import record

registry = Registry()


@registry.periodic("* * * * * *", name="beat")
@registry.actor(queue="periodic", idempotent=True)
def beat() -> None:
    record("beat", "tick")


@registry.actor(queue="held", idempotent=True)
def hold(release: str) -> None:
    """Runs until the file ``release`` exists (keeps a worker in its shutdown grace)."""
    record("hold", "start")
    deadline = time.monotonic() + 60
    while not Path(release).exists() and time.monotonic() < deadline:
        time.sleep(0.05)
