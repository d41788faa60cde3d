"""Actors, their options, and `module:attr` resolution with one message per failure."""

from __future__ import annotations

from pathlib import Path

import pytest

import taskq
from taskq.exceptions import DuplicateActor
from taskq.registry import Registry, RetryBackoff, load_registry, resolve_reference


def test_actor_decorator_with_and_without_options() -> None:
    registry = taskq.Registry()

    @registry.actor
    def plain(x: int) -> int:
        return x + 1

    @registry.actor(
        name="custom", queue="q1", max_attempts=5, timeout=2.5, idempotent=True, max_crashes=3
    )
    async def fancy() -> None:
        return None

    assert plain(1) == 2  # calling the actor calls the function
    assert registry.get("plain") is plain and plain.queue == "default" and not plain.is_async
    assert fancy.name == "custom" and fancy.is_async
    assert (
        fancy.queue,
        fancy.max_attempts,
        fancy.timeout,
        fancy.idempotent,
        fancy.max_crashes,
    ) == ("q1", 5, 2.5, True, 3)
    assert registry.queues == {"default", "q1"}
    assert len(registry) == 2 and "custom" in registry


def test_duplicate_names_are_refused() -> None:
    registry = taskq.Registry()
    registry.actor(name="x")(print)
    with pytest.raises(taskq.DuplicateActor, match="'x' is already registered"):
        registry.actor(name="x")(print)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_attempts": 0}, "max_attempts must be an integer from 1 to 2147483647"),
        ({"max_attempts": 2**31}, "max_attempts must be an integer from 1 to 2147483647"),
        ({"max_crashes": 0}, "max_crashes must be an integer from 1 to 2147483647"),
        ({"priority": 2**31}, "priority must be an integer from -2147483648 to 2147483647"),
        ({"timeout": -1}, "timeout must be a positive number"),
        ({"queue": "has space"}, "invalid queue name"),
        ({"name": "bad name!"}, "invalid actor name"),
    ],
)
def test_bad_options_are_config_errors(options: dict, message: str) -> None:
    def job() -> None:
        return None

    with pytest.raises(taskq.ConfigError, match=message):
        taskq.Registry().actor(**options)(job)


def test_cpu_bound_actor_must_be_sync() -> None:
    async def coro() -> None:
        return None

    with pytest.raises(taskq.ConfigError, match="cpu_bound actor must be a plain function"):
        taskq.Registry().actor(cpu_bound=True)(coro)


def test_unknown_actor_lookup() -> None:
    with pytest.raises(taskq.ActorNotFound, match="no actor named 'nope'"):
        taskq.Registry().get("nope")


def test_resolve_reference_success() -> None:
    registry = load_registry("tests.fixtures.registry_ok:registry")
    assert "resize" in registry


@pytest.mark.parametrize(
    ("reference", "message"),
    [
        ("no_colon_here", "expected MODULE:ATTR"),
        (":registry", "expected MODULE:ATTR"),
        ("tests.fixtures.registry_ok:", "expected MODULE:ATTR"),
        ("tests.fixtures.does_not_exist:registry", "no such module"),
        ("tests.fixtures.registry_ok:missing", "has no attribute 'missing'"),
        ("tests.fixtures.registry_ok:not_a_registry", "is a int, not a taskq.Registry"),
    ],
)
def test_each_resolution_failure_has_its_own_message(reference: str, message: str) -> None:
    with pytest.raises(taskq.ActorNotFound, match=message):
        load_registry(reference)


def test_a_module_that_raises_on_import_shows_its_own_error_and_where() -> None:
    with pytest.raises(taskq.ActorError) as info:
        load_registry("tests.fixtures.registry_broken:registry")
    assert not isinstance(info.value, taskq.ActorNotFound)
    assert type(info.value).__name__ == "ActorImportError"
    assert isinstance(info.value.__cause__, RuntimeError)
    assert str(info.value).endswith(
        "RuntimeError: this module fails on import (at "
        f"{Path(__file__).parents[1] / 'fixtures' / 'registry_broken.py'}, line 1)"
    )


def test_resolve_dotted_attribute() -> None:
    assert resolve_reference("tests.fixtures.registry_ok:resize.name") == "resize"


def test_retry_backoff_ceiling_caps() -> None:
    backoff = RetryBackoff(initial=1.0, factor=2.0, maximum=600.0)
    assert [backoff.ceiling(n) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert backoff.ceiling(100) == 600.0
    assert backoff.ceiling(10_000) == 600.0  # no OverflowError


def test_include_serves_another_registry_s_actors_and_schedules() -> None:
    first, second = Registry(), Registry()

    @first.actor
    def a() -> None: ...

    @second.periodic("0 * * * *")
    @second.actor(queue="other")
    def b() -> None: ...

    first.include(second)
    assert sorted(actor.name for actor in first) == ["a", "b"]
    assert first.queues == {"default", "other"}
    assert [s.name for s in first.schedules] == ["b"]

    clash = Registry()

    @clash.actor(name="b")
    def not_b() -> None: ...

    with pytest.raises(DuplicateActor, match="'b' is in both registries"):
        first.include(clash)
    assert first.get("b").fn is not not_b  # nothing of the refused one was taken
