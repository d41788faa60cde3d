"""``taskq dashboard``: check the settings and the store, then serve with uvicorn."""

from __future__ import annotations

import asyncio
import ipaddress
import os

import uvicorn

from ..events import DASHBOARD_LISTENING, DASHBOARD_UNAUTHENTICATED
from ..exceptions import ConfigError
from ..logs import get_logger
from ..store import create_store
from .app import DashboardSettings, create_app

log = get_logger(__name__)

TOKEN_ENV = "TASKQ_DASHBOARD_TOKEN"


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _check_store(settings: DashboardSettings) -> None:
    store = create_store(settings.dsn, settings.schema)
    await store.open()
    try:
        await store.check_schema()
    finally:
        await store.close()


def settings_from_env(
    *, allow_actions: bool, dsn: str | None = None, schema: str | None = None
) -> DashboardSettings:
    token = os.environ.get(TOKEN_ENV) or None
    if allow_actions and token is None:
        raise ConfigError(f"--allow-actions needs {TOKEN_ENV}: actions are never anonymous")
    if token is not None and len(token) < 16:
        raise ConfigError(f"{TOKEN_ENV} is too short: use at least 16 characters")
    return DashboardSettings(dsn=dsn, schema=schema, allow_actions=allow_actions, token=token)


def serve(
    *,
    host: str,
    port: int,
    allow_actions: bool,
    dsn: str | None = None,
    schema: str | None = None,
) -> int:
    settings = settings_from_env(allow_actions=allow_actions, dsn=dsn, schema=schema)
    asyncio.run(_check_store(settings))  # StoreUnavailable / SchemaNotMigrated: one line
    if not _loopback(host) and settings.token is None:
        log.event(
            DASHBOARD_UNAUTHENTICATED,
            host=host,
            detail=f"anyone who reaches {host}:{port} can read job arguments and errors; "
            f"set {TOKEN_ENV} to require it",
        )
    log.event(
        DASHBOARD_LISTENING,
        url=f"http://{host}:{port}/",
        actions=allow_actions,
        auth="token" if settings.token else "none",
    )
    uvicorn.run(create_app(settings), host=host, port=port, log_level="warning", access_log=False)
    return 0
