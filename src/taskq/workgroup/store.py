"""The workgroup supervisor's store, as a part (``lifecycle.Part``): the store it rescues
dead children's jobs on, checks their health on, and reports the fleet to.

``start`` opens it: when a child has health checks on, a store that cannot be opened
refuses the start (``WorkgroupStartError``); otherwise it is logged
(``workgroup-store-unavailable``) and opened again when it is next needed (a rescue at
once; the fleet report at most once a minute). ``run`` waits for the stop and closes it.

Which store: ``[supervisor] health_pg_dsn``, else ``TASKQ_PG_DSN_DIRECT`` (a direct
connection, past a pooler), else the store the children use (the environment they are
started with).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping

from ..events import WORKGROUP_STORE_OPENED, WORKGROUP_STORE_UNAVAILABLE
from ..exceptions import TaskqError, WorkgroupStartError
from ..lifecycle import Stoppable, StopSignal
from ..logs import get_logger
from ..settings import HEALTH_DSN_ENV, env_dsn, env_setting
from ..store import Store, create_store
from .config import SupervisorConfig

log = get_logger(__name__)

#: one store call of the supervisor's (an open, a rescue)
STORE_CALL_TIMEOUT = 10.0
#: while the store cannot be opened, how often the fleet report tries again
REPORT_REOPEN_INTERVAL = 60.0
#: the supervisor's own pooled connections: health checks and the fleet reporter
SUPERVISOR_POOL = 2


class SupervisorStore(Stoppable):
    name = "store"
    stop_timeout = None  # closing is bounded by the store's own timeouts

    def __init__(
        self, config: SupervisorConfig, env: Mapping[str, str] | None, *, required: bool
    ) -> None:
        self._config = config
        self._env = env
        self._required = required
        self.store: Store | None = None
        self._next_report_open = 0.0
        self._stopped = StopSignal()

    async def start(self) -> None:
        await self._open(required=self._required)

    async def run(self) -> None:
        try:
            await self._stopped.wait()
        finally:
            if self.store is not None:
                await self.store.close()

    async def for_report(self) -> Store | None:
        """The store for the fleet report: opened again at most once a minute while it
        cannot be (each failed attempt logs a warning)."""
        if self.store is None and time.monotonic() >= self._next_report_open:
            self._next_report_open = time.monotonic() + REPORT_REOPEN_INTERVAL
            await self._open(required=False)
        return self.store

    async def for_rescue(self) -> Store | None:
        if self.store is None:
            await self._open(required=False)
        return self.store

    def _settings(self) -> tuple[str | None, str | None]:
        env = os.environ if self._env is None else self._env
        direct = self._config.health_pg_dsn or env.get(HEALTH_DSN_ENV) or None
        if self._env is None:
            return direct, self._config.health_pg_schema
        dsn = direct or env_dsn(self._env)
        return dsn, self._config.health_pg_schema or env_setting("TASKQ_SCHEMA", self._env)

    async def _open(self, *, required: bool) -> None:
        try:
            dsn, schema = self._settings()
            # health checks and the fleet reporter share it (docs/worker.md, Connections)
            store = create_store(
                dsn, schema, pool_size=SUPERVISOR_POOL, application_name="taskq workgroup"
            )
            await asyncio.wait_for(store.open(), STORE_CALL_TIMEOUT)
        except (TaskqError, OSError, TimeoutError) as exc:
            message = exc.message if isinstance(exc, TaskqError) else str(exc) or type(exc).__name__
            if required:
                raise WorkgroupStartError(
                    f"the health-check store could not be opened: {message}"
                ) from None
            log.event(
                WORKGROUP_STORE_UNAVAILABLE,
                error=message,
                detail="dead children's jobs will be rescued by lease expiry",
            )
            return
        self.store = store
        log.event(WORKGROUP_STORE_OPENED, dsn=store.display_dsn)
