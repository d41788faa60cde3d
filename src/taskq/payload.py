"""Job arguments and results as JSON: encode, check the size, decode. No pickle, ever.

What is encoded is checked by ``validation.check_json`` as well: no NUL character, no
lone surrogate, no nesting deeper than ``MAX_JSON_DEPTH`` (the same refusal on both
stores, before anything is written)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

from .exceptions import NotJSONSerializable, PayloadError, PayloadTooLarge
from .validation import SHORT_JSON, check_json, json_ok, too_deep

DEFAULT_MAX_PAYLOAD_BYTES = 1024 * 1024  # 1 MiB, args and kwargs together

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))

#: ``_encoder``'s C encoder, built once (``JSONEncoder.encode`` builds one per call: about
#: half the cost of encoding a job's few arguments). Without the circular-reference
#: markers, so it is shared by every thread; whatever it fails on (a circular value
#: included, as a RecursionError) is encoded again by ``_encoder``, whose error is the
#: one reported. None where the C accelerator is missing.
_c_encode: Callable[[Any, int], Sequence[str]] | None = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _encoder.default, encode_basestring, None, ":", ",", False, False, False
    )
)


def fast_dumps(value: Any) -> str | None:
    """``value`` as ``dumps`` encodes it, or None when it fails or is refused (then
    ``dumps`` says why)."""
    if _c_encode is None:
        return None
    try:
        text = "".join(_c_encode(value, 0))
    except Exception:  # anything: the value is encoded again, by the checking encoder
        return None
    if "\\u0000" in text or not text.isascii() or len(text) > SHORT_JSON:
        return text if json_ok(text) else None  # else short, ASCII, no NUL: nothing to check
    return text


def dumps(value: Any, *, what: str = "value") -> str:
    text = fast_dumps(value)
    if text is not None:
        return text
    try:
        text = _encoder.encode(value)
    except RecursionError:
        raise too_deep(what) from None
    except (TypeError, ValueError) as exc:
        raise NotJSONSerializable(f"{what} is not JSON-serialisable: {exc}") from None
    return check_json(text, what)


def encode_result(value: Any, *, actor: str, max_bytes: int) -> tuple[str | None, str | None]:
    """A job's result as stored: ``(result_json, None)``, or ``(None, why)`` when it cannot
    be stored (not JSON-serialisable, or over ``max_bytes`` of UTF-8). The one rule for
    every runner: async, sync and cpu_bound actors (the pool's children call it too)."""
    what = f"the result of {actor!r}"
    try:
        result_json = check_json(_encoder.encode(value), what)
    except RecursionError:
        return None, str(too_deep(what))
    except PayloadError as exc:
        return None, str(exc)
    except Exception as exc:  # anything the value's own methods raise while encoding
        return None, f"{what} is not JSON-serialisable: {type(exc).__name__}: {exc}"
    if len(result_json) > max_bytes:  # characters <= bytes: a cheap first check
        size = len(result_json.encode())
        if size > max_bytes:
            return None, f"the result of {actor!r} is {size} bytes, over the limit of {max_bytes}"
    return result_json, None


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


META_MAX_BYTES = 8 * 1024  # a job's meta: a small JSON object (at enqueue and after updates)
MAX_TAGS = 20
TAG_MAX_CHARS = 64


def encode_meta(meta: Mapping[str, Any] | None, *, what: str = "meta") -> str | None:
    """A job's meta as JSON text (``None`` for none or empty), within ``META_MAX_BYTES``."""
    if meta is None:
        return None
    if not isinstance(meta, Mapping):
        raise NotJSONSerializable(
            f"{what} must be a JSON object (a dict), got {type(meta).__name__}"
        )
    if not meta:
        return None
    for key in meta:
        if not isinstance(key, str):
            raise NotJSONSerializable(f"{what} keys must be strings, got {key!r}")
    text = dumps(dict(meta), what=what)
    size = len(text.encode())
    if size > META_MAX_BYTES:
        raise PayloadTooLarge(f"{what} is {size} bytes, over the limit of {META_MAX_BYTES} bytes")
    return text


def check_tags(tags: Sequence[str] | None) -> tuple[str, ...]:
    """Tags as a tuple of distinct short strings, in the order given."""
    if not tags:
        return ()
    if isinstance(tags, str):
        raise NotJSONSerializable(f"tags must be a list of strings, not the string {tags!r}")
    out: list[str] = []
    for tag in tags:
        if (
            not isinstance(tag, str)
            or not 1 <= len(tag) <= TAG_MAX_CHARS
            or not tag.isprintable()
            or tag != tag.strip()
        ):
            raise NotJSONSerializable(
                f"a tag must be a printable string of 1-{TAG_MAX_CHARS} characters without "
                f"surrounding spaces, got {tag!r:.80}"
            )
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise PayloadTooLarge(f"a job has at most {MAX_TAGS} tags, got {len(out)}")
    return tuple(out)
