"""The dashboard's guard pieces on their own: the throttle's window and bursts with a
fake clock, its memory bound, and how a Host header is read."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette")

from taskq.web.auth import Throttle
from taskq.web.guard import host_name, served_hosts, valid_host


def test_the_throttle_counts_a_sliding_window_and_a_burst_starts_once() -> None:
    now = [0.0]
    throttle = Throttle(limit=3, window=60.0, clock=lambda: now[0])
    firsts = []
    for _ in range(3):
        firsts.append(throttle.failed("a"))
        now[0] += 10
    assert firsts == [True, False, False]
    assert throttle.retry_after("a") == pytest.approx(30.0)  # the first is 30 s from leaving
    assert throttle.retry_after("b") is None
    now[0] += 31  # the first failure left the window: one more try allowed
    assert throttle.retry_after("a") is None
    assert throttle.failed("a") is False  # still the same burst (failures < 60 s apart)
    now[0] += 61
    assert throttle.failed("a") is True  # a quiet minute: a new burst


def test_the_throttle_forgets_the_oldest_clients_past_its_bound() -> None:
    now = [0.0]
    throttle = Throttle(limit=1, window=60.0, clock=lambda: now[0], max_clients=3)
    for name in "abcd":
        throttle.failed(name)
    assert throttle.retry_after("a") is None  # forgotten
    assert all(throttle.retry_after(n) is not None for n in "bcd")


@pytest.mark.parametrize(
    ("header", "name"),
    [
        ("localhost:8760", "localhost"),
        ("LOCALHOST", "localhost"),
        ("example.com.", "example.com"),
        ("[::1]:8760", "::1"),
        ("[::1]", "::1"),
        ("10.0.0.1:80", "10.0.0.1"),
        ("", None),
        ("a b", None),
        ("host:port", None),
        ("[::1", None),
        ("[::1]x", None),
        ("[zz]:1", None),
        ("evil\x00.example", None),
    ],
)
def test_a_host_header_is_read_strictly(header: str, name: str | None) -> None:
    assert host_name(header) == name


def test_served_hosts_and_allowed_host_names() -> None:
    assert served_hosts("0.0.0.0", ()) == {"localhost", "127.0.0.1", "::1"}
    assert served_hosts("10.0.0.5", ["Dash.Example", "[fd00::1]"]) == {
        "localhost",
        "127.0.0.1",
        "::1",
        "10.0.0.5",
        "dash.example",
        "fd00::1",
    }
    assert valid_host("dash.example") and valid_host("fd00::1") and valid_host("[fd00::1]")
    assert not valid_host("https://dash.example") and not valid_host("dash.example:80")
