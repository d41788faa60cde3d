"""Django's databases as taskq sees them: a connection for ``connection=`` and the DSN of
a ``DATABASES`` alias.

``connection(using)`` is ``django.db.connections[using]``; pass it as ``connection=``
and the job is written in the current ``transaction.atomic()`` block (or at once, in
autocommit)::

    from django.db import connection, transaction

    with transaction.atomic():
        order = Order.objects.create(...)
        client.enqueue_with(send_receipt, [order.id], connection=connection)

Needs Django 4.2+ on psycopg 3 (the ``postgresql`` backend with psycopg installed) or
the ``sqlite3`` backend, pointing at the taskq store's database. ``dsn(using)`` is the
taskq DSN of that database, built from its settings (the test database's while Django's
test runner has one). Django is imported only when these functions are called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from ...exceptions import ConfigError

#: keys of a Postgres database's OPTIONS that are Django's or psycopg's, not libpq's
_NOT_LIBPQ = frozenset(
    {
        "assume_role",
        "context",
        "cursor_factory",
        "isolation_level",
        "pool",
        "prepare_threshold",
        "server_side_binding",
    }
)


def connection(using: str = "default") -> Any:
    """Django's connection for the database alias ``using``."""
    from django.db import connections

    return connections[using]


def dsn(using: str = "default") -> str:
    """The taskq DSN of Django's database ``using``: ``postgresql://...`` from its NAME,
    USER, PASSWORD, HOST, PORT and the libpq parameters of its OPTIONS, or
    ``sqlite:////abs/path`` from its NAME. A ``ConfigError`` says why when it has none."""
    from django.db import connections
    from django.db.utils import ConnectionDoesNotExist

    try:
        wrapper = connections[using]
    except ConnectionDoesNotExist:
        raise ConfigError(
            f"settings.TASKQ DATABASE is {using!r}, which is not in settings.DATABASES"
        ) from None
    return dsn_of(wrapper.vendor, wrapper.settings_dict, using)


def dsn_of(vendor: str, settings_dict: Mapping[str, Any], using: str = "default") -> str:
    """``dsn()`` for a backend name and a ``DATABASES`` entry."""
    if vendor == "postgresql":
        return _postgres_dsn(settings_dict)
    if vendor == "sqlite":
        return _sqlite_dsn(settings_dict, using)
    raise ConfigError(
        f"Django database {using!r} uses the {vendor} backend; taskq's store is Postgres "
        "or SQLite: give taskq a Postgres or SQLite database in settings.TASKQ DATABASE"
    )


def _postgres_dsn(settings_dict: Mapping[str, Any]) -> str:
    options = dict(settings_dict.get("OPTIONS") or {})
    params: dict[str, str] = {
        key: str(value)
        for key, value in options.items()
        if key not in _NOT_LIBPQ and isinstance(value, str | int | float)
    }
    name = settings_dict.get("NAME")
    user = settings_dict.get("USER") or ""
    password = settings_dict.get("PASSWORD") or ""
    host = str(settings_dict.get("HOST") or "")
    port = str(settings_dict.get("PORT") or "")
    if name is None:
        name = "postgres"  # as Django connects when NAME is None
    auth = ""
    if user:
        auth = quote(str(user), safe="") + (":" + quote(str(password), safe="") if password else "")
        auth += "@"
    elif password:
        params["password"] = str(password)
    netloc = ""
    if host.startswith("/"):  # a Unix socket directory: a parameter, not a URL host
        params["host"] = host
    elif host:
        netloc = f"[{host}]" if ":" in host else quote(host, safe="")
    if port:
        netloc += f":{port}"
    query = f"?{urlencode(params, quote_via=quote)}" if params else ""
    return f"postgresql://{auth}{netloc}/{quote(str(name), safe='')}{query}"


def _sqlite_dsn(settings_dict: Mapping[str, Any], using: str) -> str:
    name = str(settings_dict.get("NAME") or "")
    if not name or name == ":memory:" or "mode=memory" in name:
        raise ConfigError(
            f"Django database {using!r} is an in-memory SQLite database, which taskq's "
            "workers cannot share: give it a file (for tests: DATABASES[...]['TEST']['NAME'])"
        )
    if name.startswith("file:"):
        name = name[len("file:") :].split("?", 1)[0]
    return f"sqlite:///{os.path.abspath(name)}"


def migrate(using: str = "default", schema: str | None = None) -> list[str]:
    """``taskq migrate`` on Django's database ``using``: the versions it applied."""
    import asyncio
    import threading

    from ...store import create_store

    store = create_store(dsn(using), schema)
    result: list[list[str]] = []
    errors: list[BaseException] = []

    async def run() -> None:
        await store.open()
        try:
            result.append(await store.migrate())
        finally:
            await store.close()

    def in_thread() -> None:  # a loop of its own, whatever the caller runs in
        try:
            asyncio.run(run())
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=in_thread, name="taskq-migrate")
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return result[0]
