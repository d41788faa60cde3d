"""The example app's actors: ``taskq worker --actors examples.fastapi_app.tasks:registry``."""

from __future__ import annotations

import taskq

registry = taskq.Registry()


@registry.actor(max_attempts=5)
async def send_receipt(order_id: int, note: str) -> str:
    """Stands for an e-mail: the order the job was enqueued with, as the worker saw it."""
    return f"receipt for order {order_id}: {note}"
