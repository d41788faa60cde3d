"""The shared RestartPolicy, with an injected clock and random source (no sleeping)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from taskq.restart import Recovered, RestartPolicy
from tests.support.helpers import FakeClock


def always(value: float):
    return lambda: value


# -- plain unit tests -------------------------------------------------------------------


def test_seed_sequence_doubles_from_a_tenth_of_a_second_to_a_ten_second_cap() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.999999), burst_limit=1000)
    ceilings = []
    for _ in range(10):
        decision = policy.on_failure()
        ceilings.append(decision.delay)
        clock.advance(0.01)
    expected = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0, 10.0]
    assert ceilings == pytest.approx([c * 0.999999 for c in expected])


def test_seed_more_than_ten_restarts_in_sixty_seconds_gives_up() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.5))
    decisions = []
    for _ in range(11):
        decisions.append(policy.on_failure())
        clock.advance(5.0)  # 11 failures within 50 s
    assert [d.give_up for d in decisions] == [False] * 10 + [True]
    assert decisions[-1].recent == 11
    assert decisions[-1].delay == 0.0
    assert policy.latched


def test_full_jitter_scales_the_ceiling_by_the_random_draw() -> None:
    policy = RestartPolicy(clock=FakeClock(), rng=always(0.25), initial=1.0, maximum=100.0)
    assert policy.on_failure().delay == pytest.approx(0.25)
    assert policy.on_failure().delay == pytest.approx(0.5)
    assert policy.on_failure().delay == pytest.approx(1.0)


def test_zero_draw_gives_zero_delay() -> None:
    policy = RestartPolicy(clock=FakeClock(), rng=always(0.0))
    assert policy.on_failure().delay == 0.0


def test_on_success_resets_the_backoff_but_not_the_burst_window() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.999), burst_limit=3)
    for _ in range(3):
        policy.on_failure()
    policy.on_success(Recovered.FINISHED_A_JOB)
    assert policy.consecutive_failures == 0
    decision = policy.on_failure()  # the 4th failure inside the window still latches
    assert decision.attempt == 1
    assert decision.give_up


def test_construction_alone_does_not_reset_the_count() -> None:
    """Only a success of the replacement resets: failing again right away keeps growing."""
    policy = RestartPolicy(clock=FakeClock(), rng=always(0.999), burst_limit=100)
    attempts = [policy.on_failure().attempt for _ in range(4)]
    assert attempts == [1, 2, 3, 4]


def test_quiet_for_stable_after_resets_the_consecutive_count() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.999), stable_after=30.0)
    policy.on_failure()
    policy.on_failure()
    clock.advance(29.9)
    assert policy.on_failure().attempt == 3  # not quiet long enough
    clock.advance(30.0)
    assert policy.on_failure().attempt == 1


def test_stable_after_defaults_to_the_burst_window() -> None:
    policy = RestartPolicy(burst_window=42.0)
    assert policy.stable_after == 42.0


def test_failures_leave_the_burst_window_as_time_passes() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.5), burst_limit=2, burst_window=10.0)
    policy.on_failure()
    policy.on_failure()
    clock.advance(10.5)
    decision = policy.on_failure()
    assert not decision.give_up
    assert decision.recent == 1


def test_a_failure_exactly_at_the_window_edge_still_counts() -> None:
    clock = FakeClock()
    policy = RestartPolicy(clock=clock, rng=always(0.5), burst_limit=1, burst_window=10.0)
    policy.on_failure()
    clock.advance(10.0)
    assert policy.on_failure().give_up


def test_huge_attempt_numbers_do_not_overflow() -> None:
    policy = RestartPolicy(maximum=7.0)
    assert policy.ceiling(10_000) == 7.0


def test_a_zero_initial_delay_stays_zero_even_past_float_overflow() -> None:
    policy = RestartPolicy(initial=0.0, factor=4.0, maximum=10.0)
    assert policy.ceiling(10_000) == 0.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"initial": -1.0},
        {"maximum": -0.1},
        {"factor": 0.5},
        {"burst_limit": -1},
        {"burst_window": 0.0},
    ],
)
def test_invalid_settings_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        RestartPolicy(**kwargs)


# -- properties -------------------------------------------------------------------------

settings_kwargs = {"max_examples": 150, "deadline": None}
gaps = st.lists(st.floats(min_value=0.0, max_value=30.0, allow_nan=False), min_size=1, max_size=40)
draws = st.floats(min_value=0.0, max_value=0.999999, allow_nan=False)


@st.composite
def policies(draw: st.DrawFn) -> dict[str, float]:
    return {
        "initial": draw(st.floats(min_value=0.0, max_value=5.0, allow_nan=False)),
        "factor": draw(st.floats(min_value=1.0, max_value=4.0, allow_nan=False)),
        "maximum": draw(st.floats(min_value=0.0, max_value=60.0, allow_nan=False)),
        "burst_limit": draw(st.integers(min_value=0, max_value=15)),
        "burst_window": draw(st.floats(min_value=0.5, max_value=120.0, allow_nan=False)),
        "stable_after": draw(st.floats(min_value=0.5, max_value=120.0, allow_nan=False)),
    }


@settings(**settings_kwargs)
@given(config=policies(), gaps=gaps, draw=draws)
def test_no_delay_exceeds_the_maximum_or_leaves_zero_to_ceiling(
    config: dict[str, float], gaps: list[float], draw: float
) -> None:
    clock = FakeClock()
    policy = RestartPolicy(**config, clock=clock, rng=always(draw))
    for gap in gaps:
        clock.advance(gap)
        decision = policy.on_failure()
        assert 0.0 <= decision.delay <= config["maximum"]
        assert decision.delay <= policy.ceiling(decision.attempt)
        assert policy.ceiling(decision.attempt) <= config["maximum"]


@settings(**settings_kwargs)
@given(config=policies(), gaps=gaps)
def test_latches_exactly_when_failures_in_the_window_exceed_the_limit(
    config: dict[str, float], gaps: list[float]
) -> None:
    clock = FakeClock()
    policy = RestartPolicy(**config, clock=clock, rng=always(0.5))
    times: list[float] = []
    latched = False
    for gap in gaps:
        clock.advance(gap)
        times.append(clock.now)
        in_window = sum(1 for t in times if clock.now - t <= config["burst_window"])
        decision = policy.on_failure()
        should_latch = latched or in_window > config["burst_limit"]
        assert decision.give_up == should_latch, (in_window, decision)
        assert decision.recent == in_window or latched
        latched = should_latch
        assert policy.latched == latched


@settings(**settings_kwargs)
@given(config=policies(), gaps=gaps, later=gaps)
def test_once_latched_it_stays_latched(
    config: dict[str, float], gaps: list[float], later: list[float]
) -> None:
    clock = FakeClock()
    policy = RestartPolicy(**{**config, "burst_limit": 0}, clock=clock, rng=always(0.5))
    for gap in gaps:
        clock.advance(gap)
        policy.on_failure()
    assert policy.latched
    for gap in later:
        clock.advance(gap * 100)  # long quiet spells and successes change nothing
        policy.on_success(Recovered.FINISHED_A_JOB)
        assert policy.on_failure().give_up


@settings(**settings_kwargs)
@given(config=policies(), gaps=gaps, success_at=st.integers(min_value=0, max_value=39))
def test_consecutive_count_follows_quiet_spells_and_successes(
    config: dict[str, float], gaps: list[float], success_at: int
) -> None:
    clock = FakeClock()
    policy = RestartPolicy(**{**config, "burst_limit": 10_000}, clock=clock, rng=always(0.5))
    expected = 0
    last: float | None = None
    for index, gap in enumerate(gaps):
        clock.advance(gap)
        if index == success_at:
            policy.on_success(Recovered.FINISHED_A_JOB)
            expected = 0
        if last is not None and clock.now - last >= config["stable_after"]:
            expected = 0
        expected += 1
        last = clock.now
        assert policy.on_failure().attempt == expected
        assert policy.consecutive_failures == expected


@settings(**settings_kwargs)
@given(config=policies(), attempt=st.integers(min_value=1, max_value=5000))
def test_ceiling_grows_monotonically_up_to_the_maximum(
    config: dict[str, float], attempt: int
) -> None:
    policy = RestartPolicy(**config)
    assert policy.ceiling(attempt) <= policy.ceiling(attempt + 1) <= config["maximum"]
    # the formula min(maximum, initial * factor ** (attempt - 1)), evaluated in log space
    # so that "too big for a float" still compares as big
    if config["initial"] == 0 or config["maximum"] == 0:
        expected = 0.0
    else:
        log_value = math.log(config["initial"]) + (attempt - 1) * math.log(config["factor"])
        expected = (
            config["maximum"] if log_value >= math.log(config["maximum"]) else (math.exp(log_value))
        )
    assert policy.ceiling(attempt) == pytest.approx(expected, rel=1e-6)
