"""The relay's pipe format (``taskq.wakeups``): what a supervisor writes, a child reads."""

from __future__ import annotations

import os

from taskq.wakeups import MAX_MESSAGE, WAKE_FD_ENV, News, decode, encode, take_fd


def read_back(data: bytes) -> News:
    news = News()
    for line in data.splitlines(keepends=True):
        news.add(decode(line))
    return news


def test_queues_and_a_cancel_go_in_one_message_each_named_once() -> None:
    data = encode(["email", "default", "email"], cancels=True)
    assert data == b"j default email\nc\n"
    assert read_back(data) == News(queues={"default", "email"}, cancels=True)


def test_nothing_to_say_is_an_empty_message_and_everything_is_a_star() -> None:
    assert encode([], cancels=False) == b""
    assert encode(["default"], cancels=True, everything=True) == b"*\n"
    assert read_back(b"*\n") == News(everything=True)


def test_a_message_too_long_for_one_atomic_write_says_everything_instead() -> None:
    queues = [f"queue-{n:04d}" for n in range(MAX_MESSAGE // 5)]
    assert encode(queues, cancels=False) == b"*\n"
    fits = encode(queues[:10], cancels=True)
    assert len(fits) <= MAX_MESSAGE and read_back(fits).queues == set(queues[:10])


def test_a_line_the_format_does_not_know_reads_as_look_at_everything() -> None:
    assert decode(b"x something new\n") == News(everything=True)
    assert decode(b"\xff\xfe\n") == News(everything=True)


def test_the_fd_is_taken_out_of_the_environment_and_only_a_pipe_counts(tmp_path) -> None:
    read_end, write_end = os.pipe()
    try:
        env = {WAKE_FD_ENV: str(read_end)}
        assert take_fd(env) == read_end
        assert WAKE_FD_ENV not in env
        assert not os.get_inheritable(read_end)
        with open(tmp_path / "f", "w") as plain:
            assert take_fd({WAKE_FD_ENV: str(plain.fileno())}) is None
        assert take_fd({WAKE_FD_ENV: "not a number"}) is None
        assert take_fd({}) is None
    finally:
        os.close(read_end)
        os.close(write_end)
