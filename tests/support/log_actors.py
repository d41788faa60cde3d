"""Actors that log with plain ``logging``, as a user's would (the logs acceptance tests)."""

from __future__ import annotations

import logging

import taskq

registry = taskq.Registry()
log = logging.getLogger("myapp.jobs")


@registry.actor(queue="logs")
async def say_async(word: str) -> None:
    log.debug("too quiet to show at INFO: %s", word)
    log.info("async actor says %s", word)


@registry.actor(queue="logs")
def say_sync(word: str) -> None:
    log.info("sync actor says %s", word)


@registry.actor(queue="logs", cpu_bound=True)
def say_cpu(word: str) -> None:
    log.info("cpu actor says %s", word)


@registry.actor(queue="logs", max_attempts=3, retry_backoff=taskq.RetryBackoff(initial=0.05))
def always_fails() -> None:
    raise ValueError("always fails")
