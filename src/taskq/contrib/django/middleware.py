"""``CloseOldConnections``: Django's connection hygiene around every sync job.

Django closes a thread's database connections when they are broken (an error the
connection did not survive: the database restarted) or older than ``CONN_MAX_AGE``, at
the start and the end of each request (``close_old_connections``), and forgets the query
log kept under ``DEBUG``. A worker's sync actors run in long-lived threads, each with its
own Django connections: this middleware does the same in that thread before and after
each job, so a database restart costs no more than it costs a web request (with the
default ``CONN_MAX_AGE = 0`` nothing at all: every job starts on a new connection).
``manage.py taskq_worker`` and ``taskq_workgroup`` install it; for a bare ``taskq
worker``, add ``--middleware taskq.contrib.django.middleware:CloseOldConnections``.
"""

from __future__ import annotations

from ...jobs import ClaimedJob
from ...middleware import Middleware

REFERENCE = "taskq.contrib.django.middleware:CloseOldConnections"


class CloseOldConnections(Middleware):
    """``close_old_connections()`` in a sync job's thread before and after it, as a
    request does (and ``reset_queries()`` before it)."""

    def before_job_in_thread(self, job: ClaimedJob) -> None:
        from django.db import close_old_connections, reset_queries

        reset_queries()
        close_old_connections()

    def after_job_in_thread(self, job: ClaimedJob) -> None:
        from django.db import close_old_connections

        close_old_connections()
