"""How psycopg returns the Postgres store's ids, times and lists: ``UUID``s, aware
datetimes (made UTC), Python lists."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast, overload
from uuid import UUID

from ..rows import Codec


@overload
def utc(value: datetime) -> datetime: ...
@overload
def utc(value: None) -> None: ...
@overload
def utc(value: datetime | None) -> datetime | None: ...
def utc(value: datetime | None) -> datetime | None:
    return value.astimezone(UTC) if value is not None else None


CODEC = Codec(uuid=lambda v: cast(UUID, v), time=utc, texts=list)
