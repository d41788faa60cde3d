"""``taskq dashboard``: check the settings and the store, bind, say so, then serve.

The socket is bound before anything is logged: ``dashboard.listening`` means it is
listening, and a port that is taken (or an address that is not this machine's) is one
``taskq:`` line and exit 1, not a uvicorn traceback after a "listening" line.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import socket

import uvicorn

from ..events import DASHBOARD_LISTENING, DASHBOARD_UNAUTHENTICATED
from ..exceptions import ConfigError
from ..logs import get_logger
from ..store import create_store
from .app import DashboardSettings, create_app
from .csrf import SECRET_ENV
from .guard import served_hosts, valid_host

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
    *,
    allow_actions: bool,
    dsn: str | None = None,
    schema: str | None = None,
    host: str = "127.0.0.1",
    allowed_hosts: tuple[str, ...] = (),
) -> DashboardSettings:
    token = os.environ.get(TOKEN_ENV) or None
    if allow_actions and token is None:
        raise ConfigError(f"--allow-actions needs {TOKEN_ENV}: actions are never anonymous")
    if token is not None and len(token) < 16:
        raise ConfigError(f"{TOKEN_ENV} is too short: use at least 16 characters")
    secret = os.environ.get(SECRET_ENV) or None
    if secret is not None and len(secret) < 32:
        raise ConfigError(f"{SECRET_ENV} is too short: use at least 32 random characters")
    for name in allowed_hosts:
        if not valid_host(name):
            raise ConfigError(
                f"--allowed-host {name!r} is not a host name: give the name alone, no "
                "scheme and no port (e.g. taskq.example.com)"
            )
    return DashboardSettings(
        dsn=dsn,
        schema=schema,
        allow_actions=allow_actions,
        token=token,
        host=host,
        allowed_hosts=allowed_hosts,
        secret=secret.encode() if secret else None,
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``, or a ``ConfigError`` saying why not."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        why = "the port is taken" if exc.errno == 98 else exc.strerror or str(exc)
        raise ConfigError(f"cannot listen on {host}:{port}: {why}") from None
    sock.set_inheritable(True)
    return sock


def serve(
    *,
    host: str,
    port: int,
    allow_actions: bool,
    dsn: str | None = None,
    schema: str | None = None,
    allowed_hosts: tuple[str, ...] = (),
) -> int:
    settings = settings_from_env(
        allow_actions=allow_actions, dsn=dsn, schema=schema, host=host, allowed_hosts=allowed_hosts
    )
    asyncio.run(_check_store(settings))  # StoreUnavailable / SchemaNotMigrated: one line
    sock = bind(host, port)
    bound = sock.getsockname()[1]
    if not _loopback(host) and settings.token is None:
        log.event(
            DASHBOARD_UNAUTHENTICATED,
            host=host,
            detail=f"anyone who reaches {host}:{bound} can read job arguments and errors; "
            f"set {TOKEN_ENV} to require it",
        )
    shown = f"[{host}]" if ":" in host else host
    log.event(
        DASHBOARD_LISTENING,
        url=f"http://{shown}:{bound}/",
        actions=allow_actions,
        auth="token" if settings.token else "none",
        hosts=sorted(served_hosts(host, allowed_hosts)),
    )
    config = uvicorn.Config(
        create_app(settings), log_level="warning", access_log=False, server_header=False
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0
