"""FastAPI and Starlette: one ``taskq.AsyncClient`` for the app's life, and enqueue in the
request's database transaction.

::

    from fastapi import Depends, FastAPI
    from taskq.contrib.fastapi import client, lifespan

    app = FastAPI(lifespan=lifespan())          # TASKQ_DSN, or lifespan("postgresql://...")

    @app.post("/orders")
    async def create(db: AsyncSession = Depends(session), jobs=Depends(client)):
        async with db.begin():                  # one transaction: the order and its job
            order = Order(...)
            db.add(order)
            await db.flush()
            await jobs.enqueue_with(send_receipt, [order.id], connection=db)

``lifespan(dsn, schema=...)`` is an ASGI lifespan: it opens the ``AsyncClient`` at
start-up (a wrong DSN stops the app from starting) and closes it at shutdown; the client
is ``app.state.taskq`` and in the lifespan state (``request.state.taskq``). To run it
with a lifespan of your own, enter it there: ``async with lifespan()(app) as state:``.
``client(request)`` gives that client: a FastAPI dependency (``Depends(client)``) or a
plain call in a Starlette endpoint. ``connection=`` takes SQLAlchemy's ``AsyncSession``
on the ``postgresql+psycopg`` dialect (docs/transactions.md).

Only Starlette is imported here, and only when this module is: never by ``import taskq``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from starlette.requests import Request

from ..client import AsyncClient
from ..exceptions import ConfigError
from ..payload import DEFAULT_MAX_PAYLOAD_BYTES

STATE = "taskq"  # the name of the client in app.state and the lifespan state


def lifespan(
    dsn: str | None = None,
    *,
    schema: str | None = None,
    max_payload_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> Callable[[Any], AbstractAsyncContextManager[dict[str, AsyncClient]]]:
    """An ASGI lifespan that opens an ``AsyncClient`` (``dsn``: else ``TASKQ_DSN``) for the
    app's life: ``FastAPI(lifespan=lifespan())``, ``Starlette(lifespan=lifespan())``."""

    @asynccontextmanager
    async def run(app: Any) -> AsyncIterator[dict[str, AsyncClient]]:
        async with AsyncClient(dsn, schema=schema, max_payload_bytes=max_payload_bytes) as opened:
            setattr(app.state, STATE, opened)
            try:
                yield {STATE: opened}
            finally:
                delattr(app.state, STATE)

    return run


def client(request: Request) -> AsyncClient:
    """The app's ``AsyncClient`` (``Depends(client)`` in FastAPI)."""
    found = getattr(request.state, STATE, None) or getattr(request.app.state, STATE, None)
    if not isinstance(found, AsyncClient):
        raise ConfigError(
            "this app has no taskq client: start it with lifespan=taskq.contrib.fastapi.lifespan()"
        )
    return found
