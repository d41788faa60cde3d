"""UUIDv7: time-ordered ids (RFC 9562), so new rows land at the right edge of the index."""

from __future__ import annotations

import os
import struct
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


def uuid7_int() -> int:
    """``uuid7()`` as the 128-bit integer of its ``UUID``."""
    with _lock:
        ms, counter = _next_ms_and_counter()
    rand_b = int.from_bytes(os.urandom(8), "big") & _RAND_B
    return (ms & _MS) << 80 | counter << 64 | _VERSION_VARIANT | rand_b


def uuid7() -> uuid.UUID:
    """A UUIDv7, monotonic within this process (12-bit counter in rand_a)."""
    return uuid.UUID(int=uuid7_int())


def uuid7_ints(n: int) -> list[int]:
    """``n`` UUIDv7s in increasing order, as the 128-bit integers of their ``UUID``s: one
    lock and one ``os.urandom`` for the batch, and no object per id (the batch enqueue
    builds ``JobId``s straight from them)."""
    global _counter
    if n <= 0:
        return []
    rands = struct.unpack(f">{n}Q", os.urandom(8 * n))
    out: list[int] = []
    with _lock:
        while len(out) < n:
            ms, counter = _next_ms_and_counter()
            # the rest of this millisecond's counters go to this batch in one run
            run = min(n - len(out), 0x1000 - counter)
            _counter = counter + run - 1
            high = (ms & _MS) << 80 | _VERSION_VARIANT
            start = len(out)
            out += [
                high | c << 64 | (r & _RAND_B)
                for c, r in zip(
                    range(counter, counter + run), rands[start : start + run], strict=True
                )
            ]
    return out


def uuid7_many(n: int) -> list[uuid.UUID]:
    """``n`` UUIDv7s in increasing order (see ``uuid7_ints``)."""
    return [uuid.UUID(int=value) for value in uuid7_ints(n)]
