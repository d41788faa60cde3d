"""``taskq.arguments.check_arguments``: an actor's arguments against its function's
signature, the rule ``enqueue`` (and a workflow's ``add``) applies before writing."""

from __future__ import annotations

import functools
from typing import Any

import pytest

import taskq
from taskq import arguments
from taskq.arguments import check_arguments

registry = taskq.Registry()


@registry.actor
def resize(path: str, width: int = 0, *, mode: str = "fit") -> None: ...


@registry.actor
def keyed(*, token: str) -> None: ...


@registry.actor
def sized(path: str, width: int) -> None: ...


@registry.actor
def only(path: str, /, width: int = 0) -> None: ...


@registry.actor
def anything(*args: Any, **kwargs: Any) -> None: ...


def logged(fn: Any) -> Any:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@registry.actor
@logged
def wrapped(path: str) -> None: ...


unreadable = registry.actor(name="unreadable")(max)  # a builtin: no signature to read


@pytest.mark.parametrize(
    ("actor", "args", "kwargs"),
    [
        (resize, ("a",), {}),
        (resize, ("a", 1), {"mode": "crop"}),
        (resize, (), {"path": "a", "width": 2}),
        (keyed, (), {"token": "t"}),
        (anything, (1, 2, 3), {"x": 1}),
        (wrapped, ("a",), None),
        (unreadable, (), {"nonsense": 1}),
    ],
)
def test_arguments_that_fit(actor, args, kwargs) -> None:
    check_arguments(actor, args, kwargs)


@pytest.mark.parametrize(
    ("actor", "args", "kwargs", "why"),
    [
        (resize, ("a",), {"widht": 3}, "got an unexpected keyword argument 'widht'"),
        (resize, (), {}, "missing a required argument: 'path'"),
        (resize, ("a", 1, 2), {}, "too many positional arguments: 3 given, at most 2"),
        (keyed, (), {}, "missing a required argument: 'token'"),
        (keyed, ("t",), {}, "too many positional arguments"),
        (wrapped, ("a",), {"paht": "a"}, "unexpected keyword argument 'paht'"),
    ],
)
def test_arguments_that_do_not_fit_name_the_parameter(actor, args, kwargs, why) -> None:
    with pytest.raises(taskq.ArgumentsMismatch, match=why) as raised:
        check_arguments(actor, args, kwargs)
    assert f"actor {actor.name!r}" in str(raised.value)
    assert isinstance(raised.value, taskq.PayloadError)  # refused at enqueue, nothing written


@pytest.mark.parametrize(
    ("actor", "args", "kwargs", "why"),
    [
        # issue 20's own example: bind names only the missing 'width'
        (
            sized,
            ("a",),
            {"widht": 3},
            "sized() got an unexpected keyword argument 'widht' (did you mean 'width'?); "
            "missing a required argument: 'width'",
        ),
        (
            resize,
            ("a",),
            {"mdoe": "crop"},
            "resize() got an unexpected keyword argument 'mdoe' (did you mean 'mode'?)",
        ),
        (  # nothing close: no guess; each unexpected keyword named
            sized,
            ("a",),
            {"zzz": 1, "wdith": 2},
            "sized() got an unexpected keyword argument 'zzz'; sized() got an unexpected "
            "keyword argument 'wdith' (did you mean 'width'?); missing a required argument: "
            "'width'",
        ),
        (  # a parameter already given is not suggested
            sized,
            ("a",),
            {"width": 1, "widht": 2},
            "sized() got an unexpected keyword argument 'widht'",
        ),
        (  # nor one filled by position
            sized,
            ("a", 1),
            {"paht": "b"},
            "sized() got an unexpected keyword argument 'paht'",
        ),
        (
            only,
            (),
            {"path": "a"},
            "'path' parameter is positional only, but was passed as a keyword",
        ),
    ],
)
def test_an_unexpected_keyword_is_named_with_the_parameter_it_likely_meant(
    actor, args, kwargs, why
) -> None:
    with pytest.raises(taskq.ArgumentsMismatch) as raised:
        check_arguments(actor, args, kwargs)
    assert str(raised.value).endswith(f": {why}; nothing was enqueued"), str(raised.value)


def test_shapes_that_are_not_json_are_left_to_the_payload_rules() -> None:
    check_arguments(resize, "abc", {})  # type: ignore[arg-type]  # a str is not a list
    check_arguments(resize, 3, {})  # type: ignore[arg-type]
    check_arguments(resize, ("a",), {1: 2})  # type: ignore[dict-item]


def test_the_signature_is_read_once_per_function() -> None:
    check_arguments(resize, ("a",))
    fit = arguments._fits[resize.fn]
    check_arguments(resize, ("b",), {"width": 1})
    assert arguments._fits[resize.fn] is fit
