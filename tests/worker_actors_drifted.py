"""The actors of ``tests.worker_actors`` as a later deploy changed them (drift tests)."""

from __future__ import annotations

from taskq import Registry

registry = Registry()


@registry.actor(max_attempts=7, idempotent=False)
async def remember(key: str) -> dict:
    return {"key": key}
