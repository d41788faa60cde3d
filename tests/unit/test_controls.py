"""The I/O-free parts of the controls: rates, limits, what a cancel did."""

from __future__ import annotations

import pytest

from taskq import Snooze
from taskq.exceptions import ConfigError
from taskq.jobs import CancelResult, Limits, Rate


@pytest.mark.parametrize(
    ("text", "rate"),
    [
        ("10/second", Rate(10, 1.0)),
        ("3/minute", Rate(3, 60.0)),
        ("3/minutes", Rate(3, 60.0)),
        (" 5 / Hour ", Rate(5, 3600.0)),
    ],
)
def test_rates_parse_and_print(text, rate):
    assert Rate.parse(text) == rate
    assert Rate.parse(str(rate)) == rate


@pytest.mark.parametrize(
    "text", ["", "x/second", "0/second", "-1/minute", "5/day", "5", "1.5/hour"]
)
def test_bad_rates_are_config_errors(text):
    with pytest.raises(ConfigError, match="invalid rate"):
        Rate.parse(text)


def test_empty_limits_are_falsy():
    assert not Limits()
    assert Limits(concurrency=1) and Limits(rate=Rate(1, 1.0))


@pytest.mark.parametrize(
    ("state", "moved", "result"),
    [
        ("cancelled", True, CancelResult.CANCELLED),
        ("running", True, CancelResult.REQUESTED),
        ("running", False, CancelResult.ALREADY_REQUESTED),
        ("succeeded", False, CancelResult.FINISHED),
        ("dead", False, CancelResult.FINISHED),
        ("cancelled", False, CancelResult.FINISHED),
    ],
)
def test_what_a_cancel_did(state, moved, result):
    assert CancelResult.of(state, moved) is result


def test_snooze_carries_its_seconds_across_a_message():
    snooze = Snooze(2.5)
    assert snooze.seconds == 2.5
    assert Snooze.seconds_in(str(snooze)) == 2.5
    assert Snooze.seconds_in("something else") is None
    for bad in (-1, float("inf"), "3", True):
        with pytest.raises(ConfigError):
            Snooze(bad)
