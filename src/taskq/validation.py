"""Bad input has one answer on both stores: the checks every entry point shares.

SQLite and Postgres disagree about some values: Postgres refuses a NUL character in
text and in ``jsonb`` (``\\u0000``), SQLite keeps it; a lone surrogate (what Python
makes of bytes that are not UTF-8, e.g. ``sys.argv`` in a UTF-8 locale) fails in the
driver's encoder on both, with a ``UnicodeEncodeError``; SQLite stores integers up to
2**63 - 1 and Postgres's ``integer`` columns up to 2**31 - 1; a JSON value nested
thousands deep exhausts the Python stack of whoever decodes it. So the API refuses
them before anything is written, the same way on both stores, with a taskq error:

- ``check_text(value, what)``: text without NUL characters or lone surrogates
  (``InvalidText``); the client's filters, unique keys, who-did-it names.
- ``check_json(text, what)`` / ``json_ok(text)``: encoded JSON without a NUL, a lone
  surrogate or nesting deeper than ``MAX_JSON_DEPTH`` (``PayloadTooDeep``); ``payload``
  checks arguments, meta and results with them.
- ``check_int(value, what, minimum)``: an integer within ``INT_MIN..INT_MAX`` (the
  range of a Postgres ``integer``): priorities, attempts and crash limits,
  concurrency and rate limits.
"""

from __future__ import annotations

import re

from .exceptions import ConfigError, InvalidText, PayloadTooDeep

#: the deepest nesting of arrays and objects a job's arguments, meta or result may have
#: (``[[1]]`` is 2 deep)
MAX_JSON_DEPTH = 64
#: the range of every integer taskq stores (a Postgres ``integer``; SQLite's is wider)
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1
#: a queue's name, wherever one is given (an actor, a flag, a workgroup's TOML, a limit)
QUEUE_NAME = re.compile(r"^[A-Za-z0-9_.\-]{1,100}$")
#: encoded JSON no longer than this cannot nest deeper than ``MAX_JSON_DEPTH``
SHORT_JSON = 2 * MAX_JSON_DEPTH

#: ``\u0000`` in JSON text, not itself escaped (``\\u0000`` is a backslash and "u0000")
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_INNERMOST = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")


def _has_surrogate(text: str) -> bool:
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def text_problem(text: str) -> str | None:
    """Why ``text`` cannot be stored alike on both stores, or None."""
    if "\x00" in text:
        return "a NUL character"
    if _has_surrogate(text):
        return "a lone surrogate (bytes that are not UTF-8)"
    return None


def check_text(value: str, what: str) -> str:
    """``value``, or ``InvalidText`` naming ``what`` and the problem."""
    problem = text_problem(value)
    if problem is not None:
        raise InvalidText(f"{what} contains {problem}: {value!r:.80}")
    return value


def json_depth(text: str, *, beyond: int = MAX_JSON_DEPTH) -> int:
    """How deep arrays and objects nest in JSON ``text`` (counted up to ``beyond + 1``):
    one regex pass a level, innermost pairs first, strings blanked before."""
    rest = _STRING.sub('""', text)  # brackets inside strings do not nest
    depth = 0
    while depth <= beyond:
        rest, removed = _INNERMOST.subn("", rest)
        if not removed:
            break
        depth += 1
    return depth


def _nul(text: str) -> bool:
    return "\\u0000" in text and _NUL_ESCAPE.search(text) is not None


def _too_deep(text: str) -> bool:
    return (
        len(text) > SHORT_JSON
        and text.count("[") + text.count("{") > MAX_JSON_DEPTH
        and json_depth(text) > MAX_JSON_DEPTH
    )


def json_ok(text: str) -> bool:
    """Encoded JSON ``text`` may be stored alike on both stores. Cheap in the common
    case (C-level scans; the depth is worked out only for text with more than
    ``MAX_JSON_DEPTH`` brackets)."""
    return not (_nul(text) or _has_surrogate(text) or _too_deep(text))


def check_json(text: str, what: str) -> str:
    """Encoded JSON ``text``, or ``InvalidText`` (a NUL, a lone surrogate) or
    ``PayloadTooDeep`` (nesting deeper than ``MAX_JSON_DEPTH``) naming ``what``."""
    if _nul(text):
        raise InvalidText(f"{what} contains a NUL character (\\u0000), which Postgres cannot store")
    if _has_surrogate(text):
        raise InvalidText(f"{what} contains a lone surrogate (bytes that are not UTF-8)")
    if _too_deep(text):
        raise too_deep(what)
    return text


def too_deep(what: str) -> PayloadTooDeep:
    """The error for ``what`` nested deeper than ``MAX_JSON_DEPTH``."""
    return PayloadTooDeep(
        f"{what} nests arrays or objects deeper than {MAX_JSON_DEPTH} levels (MAX_JSON_DEPTH)"
    )


def check_int(value: object, what: str, minimum: int = INT_MIN, maximum: int = INT_MAX) -> int:
    """``value`` if it is an integer (not a bool) within ``minimum..maximum``, else a
    ``ConfigError`` naming ``what`` and the range."""
    if not isinstance(value, int) or isinstance(value, bool) or not minimum <= value <= maximum:
        raise ConfigError(
            f"{what} must be an integer from {minimum} to {maximum}, got {value!r:.40}"
        )
    return value
