"""A host's one LISTEN connection: every new-job and cancel notification of a schema.

A workgroup supervisor given ``TASKQ_PG_DSN_DIRECT`` holds it for all its children
(``taskq.workgroup.relay`` hands what it hears down to them), so a host costs Postgres
one listening connection instead of two per worker. It LISTENs on both channels of the
schema: ``taskq_<schema>`` (a queue's name, per enqueue statement and per re-queued due
job) and ``taskq_cancel_<schema>`` (a job id, per cancel request). LISTEN needs a session
that a transaction pooler does not keep, so the DSN must reach Postgres itself.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Literal, NamedTuple

import psycopg

from .connections import Connections
from .listen import channel_for, listen_on

#: how the connection shows in pg_stat_activity
APPLICATION_NAME = "taskq wake relay"


class Notice(NamedTuple):
    #: ``listening``: both LISTENs are in place (once per connection, first);
    #: ``jobs``: ``payload`` is a queue; ``cancel``: ``payload`` is a job id
    kind: Literal["listening", "jobs", "cancel"]
    payload: str


class Notices:
    """The notifications of one schema, on a connection of their own (opened per
    ``listen``, never pooled)."""

    def __init__(self, dsn: str, schema: str) -> None:
        # only the DSN and the error mapping of the store's connections: no pool opens
        self._dsn = dsn
        self._db = Connections(dsn, schema, min_size=0, max_size=1)
        self.schema = schema
        self.channel = channel_for(schema)
        self.cancel_channel = channel_for(schema, "cancel")

    @property
    def display_dsn(self) -> str:
        return self._db.display_dsn

    async def check_same_database(self, dsn: str) -> None:
        """Refuse, with one ``ConfigError`` line, a DSN of ours that goes through a pooler
        or reaches another database than ``dsn`` (the children's ``TASKQ_DSN``, pooled or
        not): the relay would LISTEN where no job is announced. ``StoreUnavailable`` when
        either cannot be reached."""
        theirs = Connections(dsn, self.schema, min_size=0, max_size=1, direct_dsn=self._dsn)
        await theirs.check_direct_dsn()

    async def listen(self) -> AsyncGenerator[Notice]:
        """Connect, LISTEN on both channels, yield ``listening``, then every notification
        as it arrives, until the connection breaks (``StoreUnavailable``) or the caller
        stops iterating (the connection is closed)."""
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._db.conninfo, autocommit=True, application_name=APPLICATION_NAME
            )
        except psycopg.Error as exc:
            raise self._db.translate(exc) from exc
        try:
            await listen_on(conn, self._db.q, self.channel, self.cancel_channel)
            yield Notice("listening", "")
            async for notify in conn.notifies():
                if notify.channel == self.channel:
                    yield Notice("jobs", notify.payload)
                elif notify.channel == self.cancel_channel:
                    yield Notice("cancel", notify.payload)
        except psycopg.Error as exc:
            raise self._db.translate(exc) from exc
        finally:
            await conn.close()
