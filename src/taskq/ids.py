"""UUIDv7: time-ordered ids (RFC 9562), so new rows land at the right edge of the index."""

from __future__ import annotations

import os
import threading
import time
import uuid

_lock = threading.Lock()
_last_ms = 0
_counter = 0


_RAND_B = (1 << 62) - 1
_MS = (1 << 48) - 1
_VERSION_VARIANT = 0x7 << 76 | 0b10 << 62


def _next_ms_and_counter() -> tuple[int, int]:
    """The (milliseconds, counter) pair of the next id; call with ``_lock`` held."""
    global _last_ms, _counter
    ms = time.time_ns() // 1_000_000
    if ms > _last_ms:
        _last_ms, _counter = ms, int.from_bytes(os.urandom(2), "big") & 0x3FF
    else:
        _counter += 1
        if _counter > 0xFFF:  # counter exhausted within one millisecond: borrow the next
            _last_ms += 1
            _counter = 0
    return _last_ms, _counter


def uuid7() -> uuid.UUID:
    """A UUIDv7, monotonic within this process (12-bit counter in rand_a)."""
    with _lock:
        ms, counter = _next_ms_and_counter()
    rand_b = int.from_bytes(os.urandom(8), "big") & _RAND_B
    return uuid.UUID(int=(ms & _MS) << 80 | counter << 64 | _VERSION_VARIANT | rand_b)


def uuid7_many(n: int) -> list[uuid.UUID]:
    """``n`` UUIDv7s in increasing order: one lock and one ``os.urandom`` for the batch."""
    random = os.urandom(8 * n)
    out = []
    with _lock:
        for i in range(n):
            ms, counter = _next_ms_and_counter()
            rand_b = int.from_bytes(random[8 * i : 8 * i + 8], "big") & _RAND_B
            out.append((ms & _MS) << 80 | counter << 64 | _VERSION_VARIANT | rand_b)
    return [uuid.UUID(int=value) for value in out]
