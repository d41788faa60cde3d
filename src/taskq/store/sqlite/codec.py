"""How the SQLite store's rows carry ids, times and lists: text UUIDs, REAL unix seconds
(this host's clock), JSON arrays."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import overload
from uuid import UUID

from ..rows import Codec


@overload
def dt(value: float) -> datetime: ...
@overload
def dt(value: None) -> None: ...
@overload
def dt(value: float | None) -> datetime | None: ...
def dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


CODEC = Codec(uuid=UUID, time=dt, texts=json.loads)
