"""An example application's actors, one per queue of `examples/workgroup.toml`.

Validate the example from the repository root:

    taskq workgroup validate examples/workgroup.toml
"""

from __future__ import annotations

import asyncio

import taskq

registry = taskq.Registry()


@registry.actor(queue="default", idempotent=True)
async def resize(path: str, width: int) -> dict:
    await asyncio.sleep(0.01)
    return {"path": path, "width": width}


@registry.actor(queue="email", max_attempts=5)
def send_email(to: str, subject: str) -> None:
    print(f"to={to} subject={subject}")


@registry.actor(queue="report", cpu_bound=True, idempotent=True, timeout=300)
def build_report(month: str) -> int:
    return sum(i * i for i in range(100_000))


@registry.periodic("0 3 * * *", timezone="Europe/Paris", kwargs={"older_than_days": 7})
@registry.actor(queue="cleanup", idempotent=True)
def purge_tmp(older_than_days: int = 7) -> int:
    return 0
