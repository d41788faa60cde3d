"""Arguments are JSON, checked before anything is written."""

from __future__ import annotations

import pytest

import taskq
from taskq.payload import encode_arguments


def test_encodes_args_and_kwargs() -> None:
    assert encode_arguments([1, "é"], {"k": None}, actor="a") == ('[1,"é"]', '{"k":null}')


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ([object()], {}, "an argument of 'a' is not JSON-serialisable"),
        ([], {"x": {1, 2}}, "a keyword argument of 'a' is not JSON-serialisable"),
        ([float("nan")], {}, "not JSON-serialisable"),
        ([], {1: "x"}, "keyword argument names of 'a' must be strings"),
        ("abc", {}, "must be a list"),
    ],
)
def test_non_json_is_refused(args, kwargs, message: str) -> None:
    with pytest.raises(taskq.NotJSONSerializable, match=message):
        encode_arguments(args, kwargs, actor="a")


def test_oversized_payload_names_sizes() -> None:
    with pytest.raises(taskq.PayloadTooLarge, match=r"is 1006 bytes, over the limit of 1000"):
        encode_arguments(["x" * 1000], {}, actor="a", max_bytes=1000)


def test_str_subclass_keys_and_empty_arguments() -> None:
    import enum

    class Key(enum.StrEnum):
        WIDTH = "width"

    assert encode_arguments((), {Key.WIDTH: 3}, actor="a") == ("[]", '{"width":3}')
    assert encode_arguments([], {}, actor="a") == ("[]", "{}")


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    text = "é" * 500  # 500 characters, 1000 bytes in UTF-8
    assert encode_arguments([text], {}, actor="a", max_bytes=1006)  # 1004 + 2 bytes: fits
    with pytest.raises(taskq.PayloadTooLarge, match="is 1006 bytes, over the limit of 1005"):
        encode_arguments([text], {}, actor="a", max_bytes=1005)


def test_the_shared_encoder_says_what_the_checking_one_says() -> None:
    """``dumps`` encodes with one C encoder built once; what it fails on is encoded
    again by the checking encoder, whose answer (or error) is the one given."""
    import json

    from taskq.payload import dumps, fast_dumps

    reference = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for value in ([1, 2.5, "é\n\t\\"], {"a": [None, True, {"b": 1e300}]}, ("t",), "s", 7):
        assert dumps(value) == fast_dumps(value) == reference.encode(value)
    circular: list[object] = []
    circular.append(circular)
    for bad, message in (
        (circular, "Circular reference detected"),
        ([float("inf")], "Out of range float values"),
        ([b"x"], "Object of type bytes is not JSON serializable"),
    ):
        assert fast_dumps(bad) is None
        with pytest.raises(taskq.NotJSONSerializable, match=message):
            dumps(bad, what="it")
