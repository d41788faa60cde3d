"""taskq.validation: the depth of encoded JSON counted right (strings with brackets
included), NUL and surrogates found only where they are, and the integer range."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from taskq import redaction
from taskq.exceptions import ConfigError, InvalidText, PayloadTooDeep
from taskq.payload import dumps, encode_result
from taskq.validation import (
    INT_MAX,
    INT_MIN,
    MAX_JSON_DEPTH,
    check_int,
    check_json,
    json_depth,
    json_ok,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ab,:u0'),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.text(alphabet='[]{}ab"', max_size=3), children, max_size=3)
    ),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


@given(json_values)
def test_json_depth_is_the_nesting_of_the_value(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json_depth(text) == depth(value)


def test_the_depth_limit_is_exact_and_deep_values_are_refused_without_recursion_error() -> None:
    value: Any = 1
    for _ in range(MAX_JSON_DEPTH):
        value = [value]
    assert dumps(value) and json_ok(dumps(value))
    with pytest.raises(PayloadTooDeep):
        dumps([value])
    for levels in (MAX_JSON_DEPTH * 3, 5000, 100_000):
        deep: Any = 1
        for _ in range(levels):
            deep = [deep]
        with pytest.raises(PayloadTooDeep):
            dumps(deep)
        result, why = encode_result(deep, actor="a", max_bytes=10**9)
        assert result is None and why is not None and "MAX_JSON_DEPTH" in why


def encoded(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_nul_is_found_only_as_a_nul() -> None:
    assert not json_ok(encoded(["a\x00b"]))
    assert json_ok(encoded(["a\\u0000b"]))  # backslash, u, 0000: text, not a NUL
    assert not json_ok(encoded(["a\\\x00b"]))  # a backslash, then a NUL
    with pytest.raises(InvalidText):
        dumps(["a\x00b"])
    with pytest.raises(InvalidText):
        check_json(encoded({"k\x00": 1}), "value")


def test_surrogates_are_refused_and_other_non_ascii_kept() -> None:
    assert json_ok(encoded(["héllo", "日本", "🙂"]))
    with pytest.raises(InvalidText):
        dumps(["\udcff"])


@pytest.mark.parametrize("value", [INT_MAX + 1, INT_MIN - 1, 10**20, True, 1.0, "1", None])
def test_integers_outside_the_range_or_not_integers_are_refused(value: object) -> None:
    with pytest.raises(ConfigError):
        check_int(value, "priority")


def test_what_is_shown_follows_every_value_that_may_be_stored() -> None:
    assert redaction.MAX_SHOWN_DEPTH > MAX_JSON_DEPTH
