"""Job arguments as JSON: encode, check the size, decode. No pickle, ever."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .exceptions import NotJSONSerializable, PayloadTooLarge

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024  # 1 MiB, args and kwargs together

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def dumps(value: Any, *, what: str = "value") -> str:
    try:
        return _encoder.encode(value)
    except (TypeError, ValueError) as exc:
        raise NotJSONSerializable(f"{what} is not JSON-serialisable: {exc}") from None


def encode_arguments(
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    *,
    actor: str,
    max_bytes: int = DEFAULT_MAX_PAYLOAD_BYTES,
) -> tuple[str, str]:
    """Return (args_json, kwargs_json) or raise a PayloadError naming the problem."""
    if type(args) not in (list, tuple) and (
        isinstance(args, str | bytes) or not isinstance(args, Sequence)
    ):
        raise NotJSONSerializable(
            f"arguments of {actor!r} must be a list, got {type(args).__name__}"
        )
    if type(kwargs) is not dict and not isinstance(kwargs, Mapping):
        raise NotJSONSerializable(
            f"keyword arguments of {actor!r} must be an object, got {type(kwargs).__name__}"
        )
    if kwargs:
        for key in kwargs:
            if type(key) is not str and not isinstance(key, str):
                raise NotJSONSerializable(
                    f"keyword argument names of {actor!r} must be strings, got {key!r}"
                )
        kwargs_json = dumps(dict(kwargs), what=f"a keyword argument of {actor!r}")
    else:
        kwargs_json = "{}"
    args_json = dumps(list(args), what=f"an argument of {actor!r}") if args else "[]"
    size = len(args_json) + len(kwargs_json)  # characters; UTF-8 bytes are at most 4x
    if size * 4 > max_bytes:
        size = len(args_json.encode()) + len(kwargs_json.encode())
    if size > max_bytes:
        raise PayloadTooLarge(
            f"payload of {actor!r} is {size} bytes, over the limit of {max_bytes} bytes"
        )
    return args_json, kwargs_json


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)
