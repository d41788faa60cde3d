"""Typed enqueue: checked by mypy in ``make lint`` (and by pyright), never run.

Every line marked ``# type: ignore`` MUST be a type error: mypy runs with
``warn_unused_ignores`` (pyright with ``reportUnnecessaryTypeIgnoreComment``), so if
enqueueing an actor object stopped being checked against its function's signature, the
ignore would become unused and ``make lint`` would fail. The unmarked lines must
type-check. The ignores carry no error code on purpose: mypy's code for a failed
overloaded call varies (call-overload, arg-type, call-arg) between its versions and
pyright has its own; the comment after each says which error is meant.
"""

from __future__ import annotations

from typing import Any, assert_type

import taskq

registry = taskq.Registry()


@registry.actor(queue="images")
async def resize(path: str, width: int, *, keep_ratio: bool = True) -> dict[str, Any]:
    return {"path": path, "width": width, "keep_ratio": keep_ratio}


@registry.actor
def ping() -> None:
    return None


@registry.periodic("0 * * * *")
@registry.actor
def hourly(limit: int = 10) -> int:
    return limit


def periodic_keeps_the_signature(client: taskq.Client) -> None:
    client.enqueue(hourly, limit=3)
    assert_type(hourly(), int)
    client.enqueue(hourly, "3")  # type: ignore  # limit is an int


def sync_producer(client: taskq.Client) -> None:
    assert_type(client.enqueue(resize, "a.png", 64), taskq.JobId)  # a UUID, with .duplicate
    client.enqueue(resize, "a.png", width=64, keep_ratio=False)
    client.enqueue(ping)
    client.enqueue("resize", 1, "anything", goes=True)  # by name: not checked
    assert_type(ping(), None)  # calling the actor calls the function, typed as it
    ping(1)  # type: ignore  # the actor's own call is checked too

    client.enqueue(resize, "a.png")  # type: ignore  # width missing
    client.enqueue(resize, 3, 64)  # type: ignore  # path is a str
    client.enqueue(resize, "a.png", width="64")  # type: ignore  # width is an int
    client.enqueue(resize, "a.png", 64, height=3)  # type: ignore  # no height
    client.enqueue(ping, 1)  # type: ignore  # ping takes nothing


async def async_producer(client: taskq.AsyncClient) -> None:
    assert_type(await client.enqueue(resize, "a.png", 64), taskq.JobId)
    await client.enqueue(ping)
    await client.enqueue("ping", "by name", "not checked")

    await client.enqueue(resize, "a.png")  # type: ignore  # width missingwidth missing
    await client.enqueue(resize, path="a.png", width=1.5)  # type: ignore  # a float
    await client.enqueue(ping, x=1)  # type: ignore  # no x
