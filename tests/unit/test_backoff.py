"""``taskq.backoff``: the delays and the rolling window the supervisors and retry loops share."""

from __future__ import annotations

import pytest

from taskq.backoff import Backoff, RollingWindow


def test_backoff_doubles_to_its_maximum_with_full_jitter_and_resets() -> None:
    backoff = Backoff(initial=0.05, maximum=2.0, rng=lambda: 0.5)
    delays = [backoff.failed() for _ in range(8)]
    assert delays == pytest.approx([0.025, 0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0])
    assert backoff.failures == 8
    backoff.reset()
    assert backoff.failures == 0
    assert backoff.failed() == pytest.approx(0.025)


def test_backoff_never_gives_up_and_does_not_overflow() -> None:
    backoff = Backoff(initial=1.0, maximum=3.0, rng=lambda: 1.0)
    for _ in range(5000):
        delay = backoff.failed()
    assert delay == 3.0


@pytest.mark.parametrize(
    "kwargs", [{"initial": -1.0, "maximum": 1.0}, {"initial": 1.0, "maximum": 1.0, "factor": 0.5}]
)
def test_backoff_refuses_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        Backoff(**kwargs)


def test_rolling_window_counts_events_inside_the_window_edge_included() -> None:
    now = [0.0]
    window = RollingWindow(10.0, clock=lambda: now[0])
    assert window.add() == 1
    now[0] = 5.0
    assert window.add() == 2
    now[0] = 10.0
    assert window.count() == 2  # exactly 10 s old still counts
    now[0] = 10.5
    assert window.count() == 1
    window.clear()
    assert window.count() == 0
    with pytest.raises(ValueError):
        RollingWindow(0.0)
