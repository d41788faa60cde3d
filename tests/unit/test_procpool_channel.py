"""The pool's channel: the parent's end of a pool process's pipe, read on the event loop.

A real ``multiprocessing`` Pipe; this test writes the child's side itself (as
``child.py`` does: ``protocol.send(conn, message)``, or raw bytes) to reach the cases a
well-behaved child never produces: a reply cut into pieces, bytes that are no message,
the pipe closing mid-job.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import pickle
import struct
from collections.abc import Iterator
from multiprocessing.connection import Connection

import pytest

from taskq.procpool.channel import Channel
from taskq.procpool.protocol import (
    Died,
    Exchanged,
    Garbled,
    Returned,
    Started,
    TimedOut,
    send,
    to_wire,
)


@pytest.fixture
def pipe() -> Iterator[tuple[Connection, Connection]]:
    ours, theirs = multiprocessing.get_context("spawn").Pipe(duplex=True)
    yield ours, theirs
    for end in (ours, theirs):
        if not end.closed:
            end.close()


def frame(message: object) -> bytes:
    """``message`` as ``Connection.send`` frames it: a 4-byte length, the pickle."""
    payload = pickle.dumps(to_wire(message))  # type: ignore[arg-type]
    return struct.pack("!i", len(payload)) + payload


async def verdict(future: asyncio.Future[Exchanged]) -> Exchanged:
    return await asyncio.wait_for(future, 10)


async def test_a_reply_written_a_byte_at_a_time_is_read_whole(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    future = channel.exchange(7, None)
    send(theirs, Started(7, 512))
    for byte in frame(Returned(7, '"done"')):
        os.write(theirs.fileno(), bytes([byte]))
        await asyncio.sleep(0)  # the loop reads each byte on its own
    got = await verdict(future)
    assert got == Exchanged(Returned(7, '"done"'), Started(7, 512))
    channel.end()


async def test_a_started_sent_before_its_exchange_begins_is_kept_for_it(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    first = channel.exchange(1, None)
    # one write, one read: the pipelined job's Started comes before job 1 is concluded
    os.write(
        theirs.fileno(), frame(Started(1, -1)) + frame(Returned(1, "1")) + frame(Started(2, -1))
    )
    assert (await verdict(first)).verdict == Returned(1, "1")
    second = channel.exchange(2, None)
    send(theirs, Returned(2, "2"))
    assert await verdict(second) == Exchanged(Returned(2, "2"), Started(2, -1))
    channel.end()


async def test_a_reply_to_another_job_is_garbled(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    future = channel.exchange(3, None)
    send(theirs, Returned(4, "x"))
    got = await verdict(future)
    assert isinstance(got.verdict, Garbled)
    assert "unexpected reply to job 3" in got.verdict.detail
    channel.end()


@pytest.mark.parametrize(
    "written",
    [b"\x00\x00\x00\x03abc", b"\xff\xff\xff\xf0"],
    ids=["not-a-pickle", "negative-length"],
)
async def test_bytes_that_are_no_message_are_garbled(pipe, written):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    future = channel.exchange(1, None)
    os.write(theirs.fileno(), written)
    got = await verdict(future)
    assert isinstance(got.verdict, Garbled)
    channel.end()


async def test_a_tuple_that_is_no_message_is_garbled(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    future = channel.exchange(1, None)
    theirs.send((99, "what"))
    got = await verdict(future)
    assert isinstance(got.verdict, Garbled)
    assert "not a message" in got.verdict.detail
    channel.end()


async def test_the_pipe_closing_before_the_reply_is_a_death_after_started(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    future = channel.exchange(5, None)
    send(theirs, Started(5, -1))
    theirs.close()
    assert await verdict(future) == Exchanged(Died(), Started(5, -1))


async def test_what_was_written_before_the_end_is_still_the_verdict(pipe):
    ours, theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    send(theirs, Started(8, -1))
    send(theirs, Returned(8, "8"))
    channel.end()  # before the loop read anything: the process exited, what it wrote is read
    assert await verdict(channel.exchange(8, None)) == Exchanged(Returned(8, "8"), Started(8, -1))
    assert (await verdict(channel.exchange(9, None))).verdict == Died()


async def test_no_started_within_the_timeout_is_timed_out(pipe):
    ours, _theirs = pipe
    channel = Channel(ours, asyncio.get_running_loop())
    got = await verdict(channel.exchange(1, 0.05))
    assert got == Exchanged(TimedOut(), None)
    channel.end()
