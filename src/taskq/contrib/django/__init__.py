"""Django: taskq as a Django app (``"taskq.contrib.django"`` in ``INSTALLED_APPS``).

::

    # settings.py (every key optional; docs/django.md has the table)
    TASKQ = {"DATABASE": "default", "WORKER": {"max_concurrency": 8}}

    # shop/tasks.py: found because shop is an installed app
    registry = taskq.Registry()

    @registry.actor
    def send_receipt(order_id: int) -> None: ...

    # a view
    with transaction.atomic():
        order = Order.objects.create(...)
        taskq.contrib.django.client().enqueue(send_receipt, order.id)   # in the block

    $ python manage.py migrate            # taskq's tables too (or: manage.py taskq_migrate)
    $ python manage.py taskq_worker --max-concurrency 16

The modules, one idea each:

* ``apps``: the app: the system check of ``settings.TASKQ``, taskq's migrations after
  ``manage.py migrate``;
* ``conf``: ``settings.TASKQ``: every key, its default, its meaning (the docs' table);
* ``db``: Django's databases for taskq: ``connection()`` for ``connection=``, the DSN of
  an alias, migrating it (``driver_connection`` is ``taskq.txn``'s, which unwraps every
  connection ``connection=`` takes);
* ``clients``: ``client()`` and ``DjangoClient``, whose enqueues join ``atomic()``;
  ``close()``;
* ``actors``: ``taskq.contrib.django.actors:registry``, the registry workers serve
  (Django set up first; ``ACTORS`` or the apps' ``tasks`` modules);
* ``middleware``: ``CloseOldConnections``, Django's connection hygiene around sync jobs;
* ``worker``: ``manage.py taskq_worker``'s flags (``taskq worker``'s) and configuration;
* ``management/commands``: ``taskq_migrate``, ``taskq_worker``, ``taskq_workgroup``.

Importing this package does not import Django's models nor set Django up.
"""

from __future__ import annotations

from ...txn import django_driver as driver_connection
from .clients import AUTO, DjangoClient, client, close
from .db import connection, dsn
from .middleware import CloseOldConnections

__all__ = [
    "AUTO",
    "CloseOldConnections",
    "DjangoClient",
    "client",
    "close",
    "connection",
    "driver_connection",
    "dsn",
]
