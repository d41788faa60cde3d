"""The parent's end of one pool process's pipe, read by the event loop: no thread a job.

From the process's ``Ready`` to its stop, one reader registered with the loop
(``loop.add_reader`` on the pipe's fd) takes whatever the child wrote, one ``os.read``
per readiness (it never blocks), cuts it into ``multiprocessing``'s frames (a 4-byte
big-endian length, or -1 and an 8-byte length), unpickles each message and hands it to
the exchange that waits for it, or keeps it until that exchange begins (a pipelined job's
``Started`` may come before the job before it is concluded). An exchange ends as
``process.exchange`` defined it for the thread that did this before: its reply, ``Died``
(end of file, or the process exited with no reply in the pipe), ``TimedOut`` (counted
from its ``Started``; before that from the start of the exchange) or ``Garbled`` (a
message the protocol does not allow there, or bytes that are not one).

The process's exit (its sentinel, watched by the slot supervisor) ends the channel with
``end``: what the child wrote before it went is read first, so a reply that won the race
with the death is the verdict, as it was.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import select
import struct
from collections import deque
from multiprocessing.connection import Connection

from .protocol import (
    Died,
    Exchanged,
    Garbled,
    Raised,
    ResultNotSent,
    Returned,
    Started,
    TimedOut,
    Undecodable,
    Verdict,
    from_wire,
)

_READ = 1 << 16
_HEAD = struct.Struct("!i")
_LONG_HEAD = struct.Struct("!Q")


class _Waiter:
    """One job's exchange: its ``seq``, the future of its verdict, the timer."""

    __slots__ = ("future", "seq", "started", "timeout", "timer")

    def __init__(self, seq: int, future: asyncio.Future[Exchanged], timeout: float | None) -> None:
        self.seq = seq
        self.future = future
        self.timeout = timeout
        self.started: Started | None = None
        self.timer: asyncio.TimerHandle | None = None


class Channel:
    """Read one process's replies on the event loop; at most one exchange at a time."""

    def __init__(self, conn: Connection, loop: asyncio.AbstractEventLoop) -> None:
        self._fd = conn.fileno()
        self._loop = loop
        self._buffer = bytearray()
        self._inbox: deque[object] = deque()  # messages no exchange has asked for yet
        self._waiter: _Waiter | None = None
        self._reading = True
        self._ended = False  # the process ended (or its pipe did): nothing more will come
        loop.add_reader(self._fd, self._readable)

    def exchange(self, seq: int, timeout: float | None) -> asyncio.Future[Exchanged]:
        """The verdict of job ``seq`` (sent already, or queued in the pipe)."""
        assert self._waiter is None, "one exchange at a time"
        waiter = _Waiter(seq, self._loop.create_future(), timeout)
        self._waiter = waiter
        self._arm(waiter)
        while self._inbox and self._waiter is waiter:
            self._feed(waiter, self._inbox.popleft())
        if self._waiter is waiter and self._ended:
            self._resolve(waiter, Died())
        return waiter.future

    def end(self) -> None:
        """The process exited (or is being stopped): read what it wrote before it went,
        stop reading, and give the exchange in progress, if it did not get its reply,
        ``Died``. Idempotent."""
        if self._reading:
            self._drain()
            self.detach()
        self._ended = True
        if self._waiter is not None:
            self._resolve(self._waiter, Died())

    def detach(self) -> None:
        """Stop reading (before the pipe is closed: its fd may be reused)."""
        if self._reading:
            self._reading = False
            with contextlib.suppress(ValueError, OSError):
                self._loop.remove_reader(self._fd)

    # -- reading ------------------------------------------------------------------------

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, _READ)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self._take(data)

    def _drain(self) -> None:
        """Read until nothing more is there now (the writer is gone: never blocks)."""
        while self._reading:
            try:
                if not select.select([self._fd], [], [], 0)[0]:
                    return
            except (OSError, ValueError):  # the descriptor is gone: as at end of file
                self._take(b"")
                return
            self._readable()

    def _take(self, data: bytes) -> None:
        if not data:  # end of file: the child's end is closed
            self.detach()
            self.end()
            return
        self._buffer += data
        buffer, at = self._buffer, 0
        while True:
            if len(buffer) - at < _HEAD.size:
                break
            (size,) = _HEAD.unpack_from(buffer, at)
            start = at + _HEAD.size
            if size == -1:
                if len(buffer) - start < _LONG_HEAD.size:
                    break
                (size,) = _LONG_HEAD.unpack_from(buffer, start)
                start += _LONG_HEAD.size
            if size < 0:
                self._garbled(f"a frame of length {size}")
                return
            if len(buffer) - start < size:
                break
            frame = bytes(buffer[start : start + size])
            at = start + size
            try:
                message: object = from_wire(pickle.loads(frame))
            except ValueError as exc:  # a tuple that is no message: the framing still holds
                message = Garbled(str(exc))
            except Exception as exc:  # any bytes that do not unpickle: a protocol error
                self._garbled(f"a message that does not unpickle: {type(exc).__name__}: {exc}")
                return
            self._deliver(message)
        del buffer[:at]

    def _garbled(self, detail: str) -> None:
        """Bytes that are no message: nothing after them can be framed; stop reading."""
        self._buffer.clear()
        self.detach()
        self._deliver(Garbled(detail))

    def _deliver(self, message: object) -> None:
        waiter = self._waiter
        if waiter is None:
            self._inbox.append(message)
        else:
            self._feed(waiter, message)

    # -- one exchange -------------------------------------------------------------------

    def _feed(self, waiter: _Waiter, message: object) -> None:
        match message:
            case Started(seq=seq) as first if seq == waiter.seq and waiter.started is None:
                waiter.started = first
                self._arm(waiter)  # the timeout counts from the job's start
            case (
                Returned(seq=seq)
                | Raised(seq=seq)
                | ResultNotSent(seq=seq)
                | Undecodable(seq=seq) as reply
            ) if seq == waiter.seq:
                self._resolve(waiter, reply)
            case Garbled() as garbled:
                self._resolve(waiter, garbled)
            case other:
                self._resolve(waiter, Garbled(f"unexpected reply to job {waiter.seq}: {other!r}"))

    def _arm(self, waiter: _Waiter) -> None:
        if waiter.timer is not None:
            waiter.timer.cancel()
        if waiter.timeout is not None:
            waiter.timer = self._loop.call_later(waiter.timeout, self._timed_out, waiter)

    def _timed_out(self, waiter: _Waiter) -> None:
        if self._waiter is waiter:
            self._resolve(waiter, TimedOut())

    def _resolve(self, waiter: _Waiter, verdict: Verdict) -> None:
        if waiter.timer is not None:
            waiter.timer.cancel()
        self._waiter = None
        if not waiter.future.done():
            waiter.future.set_result(Exchanged(verdict, waiter.started))
