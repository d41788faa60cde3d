"""Secrets out of everything taskq shows: the one redaction module.

Every place taskq shows text to a person or a log (the dashboard, the CLI, every log
line, every ``TaskqError`` message) passes it through here, so a password is masked the
same way everywhere:

- ``text(s)`` masks passwords inside free text (an error message, a traceback, a DSN in
  any of its forms): the password of a URI's userinfo (``postgresql://user:pw@host``),
  ``password=`` in a URI's query or in key=value conninfo (``host=db password='p w'``,
  ``PGPASSWORD=...``, ``sslpassword=``), and a quoted secret-named key with a quoted value
  (``{'password': 'p'}``, ``"api_token": "t"``). ``HIDDEN`` replaces each.
- ``dsn(s)`` is ``text`` for a DSN (what a store's ``display_dsn`` is).
- ``echoed(message, dsn)`` masks a DSN's password, and each piece of it, wherever a
  driver's error message repeats it (psycopg quotes parts of a DSN it cannot parse).
- ``arguments(args, kwargs, meta)`` is what may be shown of a job's arguments: all hidden
  when its meta says ``{"sensitive": true}``, the keyword arguments named in
  ``{"sensitive": ["name", ...]}`` hidden, every keyword argument or object key whose
  name looks secret (``SECRET_NAME``: password, token, secret, api key, authorization,
  credential, private key) hidden, and ``text`` applied to every string left.
  ``result(value, meta)`` likewise for a job's result; ``value(v)`` for any JSON value.
- ``fields(mapping)`` is a log record's fields as they may be written.

Nesting is followed ``MAX_SHOWN_DEPTH`` levels deep (a deeper value is shown as
``DEEP``), so a value stored before taskq limited nesting (``payload.MAX_JSON_DEPTH``)
cannot exhaust the stack of whoever shows it.

No imports from the rest of taskq: ``exceptions`` and ``logs`` use this module.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: what a hidden argument, result or secret-named value is shown as
MASK = "••••••"
#: what a password inside text is replaced with
HIDDEN = "***"
#: what a value nested deeper than ``MAX_SHOWN_DEPTH`` is shown as
DEEP = "…(nested too deep to show)"
#: the nesting depth ``value`` follows (deeper values are shown as ``DEEP``)
MAX_SHOWN_DEPTH = 100

#: names of keyword arguments, object keys and log fields whose values are secret
SECRET_NAME = re.compile(
    r"pass(?:word|wd|phrase)?|secret|token|api_?key|authori[sz]ation|credential|private_?key",
    re.IGNORECASE,
)

_USERINFO = r"(?P<u_pre>\b[a-z][a-z0-9+.\-]*://[^\s:/@?#]*:)(?P<u_secret>[^\s/]+?)(?=@[^\s@/]*(?:[/\s?#]|$))"
_KEYWORD = (
    r"(?P<k_pre>\b\w*pass(?:word|wd)\s*=\s*)"
    r"(?P<k_secret>'(?:[^'\\]|\\.)*'?|\"(?:[^\"\\]|\\.)*\"?|[^\s&;,'\"]+)"
)
_QUOTED = (
    r"(?P<q_pre>(?P<q>['\"])[^'\"\n]*?(?:pass(?:word|wd)?|secret|token|api_?key|credential)"
    r"[^'\"\n]*(?P=q)\s*:\s*)"
    r"(?P<q_secret>'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\")"
)
_SECRET_IN_TEXT = re.compile(f"{_USERINFO}|{_KEYWORD}|{_QUOTED}", re.IGNORECASE)
#: a cheap test before the full pattern: text without any of these has nothing to mask
_MAYBE = re.compile(r"://|pass|secret|token|api_?key|credential", re.IGNORECASE)


def _mask(match: re.Match[str]) -> str:
    for name in ("u", "k", "q"):
        prefix = match.group(f"{name}_pre")
        if prefix is not None:
            secret = match.group(f"{name}_secret")
            quote = secret[0] if secret[:1] in ("'", '"') else ""
            return f"{prefix}{quote}{HIDDEN}{quote}"
    return match.group(0)  # pragma: no cover - one of the three always matched


def text(value: str | None) -> str | None:
    """``value`` with every password in it masked (None stays None)."""
    if not value or not _MAYBE.search(value):
        return value
    return _SECRET_IN_TEXT.sub(_mask, value)


def dsn(value: str) -> str:
    """A DSN fit to log or show: its password masked, in whichever form it was given."""
    return text(value) or value


def _dsn_passwords(value: str) -> list[str]:
    out = []
    for match in _SECRET_IN_TEXT.finditer(value):
        secret = match.group("u_secret") or match.group("k_secret") or ""
        secret = secret.strip("'\"")
        if secret:
            out.append(secret)
    return out


def echoed(message: str, dsn_text: str) -> str:
    """``message`` (a driver's error about ``dsn_text``) with the DSN's password masked,
    also where the message quotes only a piece of it (a password with a space, cut
    where a parser stopped)."""
    shown = text(message) or message
    for secret in _dsn_passwords(dsn_text):
        pieces = {secret, *(p for p in re.split(r"[\s'\"\\]+", secret) if len(p) >= 3)}
        for piece in sorted(pieces, key=len, reverse=True):
            shown = shown.replace(piece, HIDDEN)
    return shown


def value(item: Any, depth: int = 0) -> Any:
    """A JSON value as it may be shown: secret-named object keys masked, ``text`` on
    every string, nesting cut at ``MAX_SHOWN_DEPTH``."""
    if isinstance(item, str):
        return text(item)
    if depth >= MAX_SHOWN_DEPTH and isinstance(item, dict | list | tuple):
        return DEEP
    if isinstance(item, dict):
        return {
            k: MASK if SECRET_NAME.search(str(k)) else value(v, depth + 1) for k, v in item.items()
        }
    if isinstance(item, list | tuple):
        return [value(v, depth + 1) for v in item]
    return item


def arguments(
    args: Any, kwargs: Mapping[str, Any] | None, meta: Mapping[str, Any] | None
) -> tuple[Any, Any, bool]:
    """``(args, kwargs, anything hidden)`` as a job's arguments may be shown."""
    sensitive = (meta or {}).get("sensitive") if isinstance(meta, Mapping) else None
    if sensitive is True:
        return MASK, MASK, True
    names = {str(n) for n in sensitive} if isinstance(sensitive, list) else set()
    hidden = False
    shown: dict[str, Any] = {}
    for key, item in (kwargs or {}).items():
        if key in names or SECRET_NAME.search(key):
            shown[key], hidden = MASK, True
        else:
            shown[key] = value(item, 1)
    return value(list(args or []), 0), shown, hidden


def result(item: Any, meta: Mapping[str, Any] | None) -> Any:
    """A job's result as it may be shown: hidden for a ``{"sensitive": true}`` job."""
    if isinstance(meta, Mapping) and meta.get("sensitive") is True:
        return MASK
    return value(item)


def fields(record: Mapping[str, Any]) -> dict[str, Any]:
    """A log record's fields as they may be written: secret-named fields masked (a
    ``None`` stays None), ``text`` on every string, nested values followed."""
    out: dict[str, Any] = {}
    for key, item in record.items():
        if item is not None and SECRET_NAME.search(key) and not isinstance(item, bool | int):
            out[key] = MASK
        else:
            out[key] = value(item, 1)
    return out


def job(record: Mapping[str, Any]) -> dict[str, Any]:
    """A job as a JSON-ready mapping (``Job.to_dict()``) as it may be shown: its
    arguments (``arguments``), result (``result``), meta and every text masked."""
    meta = record.get("meta")
    meta = meta if isinstance(meta, Mapping) else None
    out = {key: value(item, 1) for key, item in record.items()}
    out["args"], out["kwargs"], _ = arguments(record.get("args"), record.get("kwargs"), meta)
    if "result" in record:
        out["result"] = result(record["result"], meta)
    return out
