"""One actor as two versions of an application's code define it, for the rolling-deploy
test: ``make_registry(1)`` and ``make_registry(2)`` differ in how a job runs
(max_attempts, timeout, priority), not in where jobs go (both on queue ``deploy``).

A worker serves ``registry``, the version named by ``TASKQ_TEST_CODE_VERSION``. Each run
records the version that ran it in its error: ``RuntimeError: v2 ran attempt 3``.
"""

from __future__ import annotations

import asyncio
import os

from taskq import Registry, RetryBackoff

OPTIONS = {
    1: {"max_attempts": 2, "timeout": None, "priority": 0},
    2: {"max_attempts": 4, "timeout": 0.5, "priority": 5},
}


def make_registry(version: int) -> Registry:
    registry = Registry()

    @registry.actor(
        queue="deploy",
        retry_backoff=RetryBackoff(initial=0.01, maximum=0.05),
        **OPTIONS[version],  # type: ignore[arg-type]
    )
    async def flaky(key: str, hold: float = 0.0) -> None:
        from taskq import current_job

        await asyncio.sleep(hold)
        raise RuntimeError(f"v{version} ran attempt {current_job().attempt}")

    return registry


registry = make_registry(int(os.environ.get("TASKQ_TEST_CODE_VERSION", "1")))
