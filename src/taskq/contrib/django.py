"""Django: enqueue jobs in the view's transaction.

Pass Django's connection as ``connection=``; the job is written in the current
``transaction.atomic()`` block (or at once, in autocommit), so it exists if and only if
the block commits::

    from django.db import connection, transaction

    with transaction.atomic():
        order = Order.objects.create(...)
        client.enqueue_with(send_receipt, [order.id], connection=connection)

``connection(using)`` is ``django.db.connections[using]``. Needs Django 4.2+ on
psycopg 3 (the ``postgresql`` backend with psycopg installed) or the ``sqlite3``
backend, pointing at the taskq store's database. Django is imported only when this
module is used.
"""

from __future__ import annotations

from typing import Any

import psycopg

from ..exceptions import ConfigError


def connection(using: str = "default") -> Any:
    """Django's connection for the database alias ``using``."""
    from django.db import connections

    return connections[using]


def driver_connection(wrapper: Any) -> Any:
    """The driver's connection under a Django connection (connecting if needed)."""
    if not hasattr(wrapper, "ensure_connection") or not hasattr(wrapper, "vendor"):
        raise ConfigError(
            f"expected a Django database connection, got {type(wrapper).__qualname__}"
        )
    if wrapper.vendor not in ("postgresql", "sqlite"):
        raise ConfigError(
            f"Django database {wrapper.alias!r} uses the {wrapper.vendor} backend; taskq "
            "enqueues in Postgres (psycopg 3) and SQLite transactions"
        )
    wrapper.ensure_connection()
    raw = wrapper.connection
    if wrapper.vendor == "postgresql" and not isinstance(raw, psycopg.Connection):
        raise ConfigError(
            f"Django database {wrapper.alias!r} runs on {type(raw).__module__.split('.')[0]}; "
            "taskq needs psycopg 3 (pip install 'psycopg[binary]')"
        )
    return raw
