"""A registry with a periodic actor that ticks every second (the scheduler's acceptance
test runs it in real ``taskq worker`` processes)."""

from __future__ import annotations

from taskq import Registry
from tests.worker_actors import record

registry = Registry()


@registry.periodic("* * * * * *", name="beat")
@registry.actor(queue="periodic", idempotent=True)
def beat() -> None:
    record("beat", "tick")
