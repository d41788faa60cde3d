"""The actors of ``tests.support.worker_actors`` as later deploys changed them (drift tests):
``registry`` changes how ``remember`` runs (taken on, logged); ``moved`` also changes
where its jobs go (refused unless forced)."""

from __future__ import annotations

from taskq import Registry

registry = Registry()


@registry.actor(max_attempts=7, idempotent=True)
async def remember(key: str) -> dict:
    return {"key": key}


moved = Registry()


@moved.actor(name="remember", queue="elsewhere", max_attempts=7, idempotent=True)
async def remember_elsewhere(key: str) -> dict:
    return {"key": key}
