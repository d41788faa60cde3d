"""The supervisor's side of the relay's pipes (``workgroup.relay.ChildPipes``), on real
pipes: who hears what, a full pipe owes its child a ``*``, a closed one is skipped."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator

import pytest

from taskq.wakeups import News
from taskq.workgroup.relay import ChildPipes

F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


@pytest.fixture
def pipes() -> Iterator[ChildPipes]:
    pipes = ChildPipes()
    yield pipes
    pipes.close()


def read_all(fd: int) -> bytes:
    os.set_blocking(fd, False)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_each_child_hears_its_queues_every_cancel_and_everything(pipes: ChildPipes) -> None:
    mail = pipes.attach("mail", ["email"])
    every = pipes.attach("every", [])
    try:
        pipes.deliver(News(queues={"default", "email"}))
        pipes.deliver(News(queues={"default"}))
        pipes.deliver(News(cancels=True))
        pipes.deliver(News(everything=True))
        assert read_all(mail) == b"j email\nc\n*\n"
        assert read_all(every) == b"j default email\nj default\nc\n*\n"
    finally:
        os.close(mail)
        os.close(every)


def test_a_full_pipe_owes_its_child_a_look_at_everything(pipes: ChildPipes) -> None:
    slow = pipes.attach("slow", ["default"])
    try:
        size = fcntl.fcntl(slow, F_SETPIPE_SZ, 4096)  # the smallest pipe: quick to fill
        sent = 0
        while sent < 2 * size:  # far more than it holds: the last writes found it full
            pipes.deliver(News(queues={"default"}))
            sent += len(b"j default\n")
        held = read_all(slow)
        plain, _, stars = held.partition(b"*\n")
        # news while it fitted; once a message did not, only "*" (2 bytes: it fits where
        # the news did not) until the pipe was full to the last byte
        assert plain == b"j default\n" * (len(plain) // 10) and plain
        assert set(stars.split(b"\n")) <= {b"*", b""}
        assert size - 1 <= len(held) <= size  # full (to the byte, or one short of it)
        pipes.deliver(News(cancels=True))  # the next news: everything, not just a cancel
        assert read_all(slow) == b"*\n"
        pipes.deliver(News(cancels=True))  # paid: back to plain news
        assert read_all(slow) == b"c\n"
    finally:
        os.close(slow)


def test_a_child_gone_is_skipped_and_detach_closes_its_end(pipes: ChildPipes) -> None:
    gone = pipes.attach("gone", ["default"])
    alive = pipes.attach("alive", ["default"])
    os.close(gone)  # its process exited: writes to it fail (EPIPE)
    try:
        pipes.deliver(News(queues={"default"}))
        assert read_all(alive) == b"j default\n"
        pipes.detach("alive")
        assert pipes.names() == ["gone"]
        assert os.read(alive, 10) == b""  # the write end is closed: the child sees the end
    finally:
        os.close(alive)
