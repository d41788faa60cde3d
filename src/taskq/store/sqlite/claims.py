"""The SQLite store's claims, run on the store thread inside one BEGIN IMMEDIATE.

The write lock makes a claim exclusive across processes, so limits need no lock of their
own: the plain claim statement when no limit covers the queues or any actor (looked at
once per ``LIMITS_TTL``), else each queue's and actor's room worked out here and the
jobs that fit taken in claim order.
"""

from __future__ import annotations

import json
import sqlite3
import time
from typing import Any

from ..queues import ACTOR, LIMITS_TTL, QUEUE, count_full
from ..sqlfile import load_queries

Q = load_queries("sqlite.sql")


class Claims:
    """One store's claims; remembers for a moment whether limits apply to some queues."""

    def __init__(self) -> None:
        # (monotonic time, found) of the last limits_exist per claim's queues (JSON)
        self._limits_seen: dict[str, tuple[float, bool]] = {}

    def forget_limits(self) -> None:
        """Look at the limits again at the next claim (they were just changed here)."""
        self._limits_seen.clear()

    def rows(
        self, db: sqlite3.Connection, params: dict[str, Any], waits: dict[tuple[str, str], int]
    ) -> list[Any]:
        """The claimed rows, inside the claim's BEGIN IMMEDIATE on ``db``: no other writer
        runs until it commits, so the limits read here cannot race another claim. The
        limits found full are counted into ``waits``."""
        if not self._limits_apply(db, params["queues"]):
            return db.execute(Q["claim"], params).fetchall()
        return self._limited(db, params, waits)

    def _limits_apply(self, db: sqlite3.Connection, queues: str) -> bool:
        """Whether a limit covers these queues (JSON) or any actor, as seen at most
        LIMITS_TTL ago: one statement fewer per claim. The claim statement skips limited
        queues and actors itself, so a stale "no" never lets a limit be exceeded."""
        now = time.monotonic()
        seen = self._limits_seen.get(queues)
        if seen is not None and now - seen[0] < LIMITS_TTL:
            return seen[1]
        found = bool(db.execute(Q["limits_exist"], {"queues": queues}).fetchone()["found"])
        self._limits_seen[queues] = (now, found)
        return found

    def _limited(
        self, db: sqlite3.Connection, params: dict[str, Any], waits: dict[tuple[str, str], int]
    ) -> list[Any]:
        """Each queue and actor gets at most its room: min(concurrency - running, rate -
        starts in the window). Each open queue offers its first ``limit`` due jobs; taken
        in claim order while every room they fall under has space, up to ``limit``."""
        limit = params["limit"]
        db.execute(Q["prune_limit_starts"], params)
        rooms = {(r["kind"], r["name"]): r["room"] for r in db.execute(Q["limit_rooms"], params)}
        blocked = [n for (k, n), room in rooms.items() if k == ACTOR and room <= 0]
        count_full(waits, [f"{k}:{n}" for (k, n), room in rooms.items() if room <= 0])
        exclude = json.dumps(json.loads(params["exclude_actors"]) + blocked)
        candidates: list[Any] = []
        for queue in [r["name"] for r in db.execute(Q["unpaused_queues"], params)]:
            if rooms.get((QUEUE, queue), 1) > 0:
                candidates += db.execute(
                    Q["claim_candidates"],
                    {
                        "queue": queue,
                        "now": params["now"],
                        "exclude_actors": exclude,
                        "limit": limit,
                    },
                ).fetchall()
        candidates.sort(key=lambda c: (c["priority"], c["run_at"], c["id"]))
        taken: dict[tuple[str, str], int] = {}
        picked: list[str] = []
        for c in candidates:
            keys = [k for k in ((QUEUE, c["queue"]), (ACTOR, c["actor"])) if k in rooms]
            if any(taken.get(k, 0) >= rooms[k] for k in keys):
                continue
            for k in keys:
                taken[k] = taken.get(k, 0) + 1
            picked.append(c["id"])
            if len(picked) >= limit:
                break
        if not picked:
            return []
        ids = json.dumps(picked)
        rows = db.execute(Q["claim_ids"], {**params, "ids": ids}).fetchall()
        db.execute(Q["count_limit_starts"], {"ids": ids, "now": params["now"]})
        return rows
