"""What keeps the dashboard safe: authentication, CSRF, and nothing secret on a page.

- **Authentication.** With ``TASKQ_DASHBOARD_TOKEN`` set, every request must carry it:
  ``Authorization: Bearer <token>`` or HTTP basic auth with the token as the password
  (the user name is recorded as who acted). Compared with ``hmac.compare_digest``.
  Actions (``--allow-actions``) cannot be enabled without a token.
- **CSRF.** A random token in an ``HttpOnly; SameSite=Strict`` cookie is repeated in
  every form (``csrf`` field) or htmx request (``X-CSRF-Token``); a POST whose copy does
  not match the cookie, or whose ``Origin`` is another site, is refused.
- **Redaction.** Passwords in DSN-like text (``scheme://user:password@``) are masked
  wherever text is shown; job arguments are hidden when the job's ``meta`` says
  ``{"sensitive": true}`` (all of them) or ``{"sensitive": ["name", ...]}`` (those
  keyword arguments), and keyword arguments whose names look secret (password,
  token, secret, api key, authorization, credential) are always masked.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from starlette.requests import Request

CSRF_COOKIE = "taskq_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
MASK = "••••••"
_DSN_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)", re.IGNORECASE)
_SECRET_NAME = re.compile(r"pass|secret|token|api_?key|authori[sz]ation|credential", re.I)


def who(request: Request, token: str | None) -> str | None:
    """The authenticated caller's name, ``"token"`` for a bearer token, or None when the
    request does not carry ``token`` (any caller when no token is configured)."""
    if token is None:
        return "anonymous"
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return "token" if _same(value.strip(), token) else None
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value.strip()).decode("utf-8").partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
        return (user or "basic") if _same(password, token) else None
    return None


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def csrf_token(request: Request) -> str:
    """This browser's CSRF token (a new one when it has none yet)."""
    existing = request.cookies.get(CSRF_COOKIE)
    if existing and len(existing) >= 32:
        return existing
    fresh: str | None = getattr(request.state, "new_csrf", None)
    if fresh is None:
        fresh = secrets.token_urlsafe(32)
        request.state.new_csrf = fresh
    return fresh


def csrf_ok(request: Request, submitted: str | None) -> bool:
    cookie = request.cookies.get(CSRF_COOKIE)
    if not cookie or not submitted or not _same(submitted, cookie):
        return False
    origin = request.headers.get("origin")
    if origin and origin != "null":
        return urlsplit(origin).netloc == request.headers.get("host", "")
    return True


def redact_text(text: str | None) -> str | None:
    """``text`` with every ``scheme://user:password@`` password masked."""
    if text is None:
        return None
    return _DSN_PASSWORD.sub(lambda m: m.group(1) + "***" + m.group(3), text)


def visible_arguments(
    args: list[Any], kwargs: dict[str, Any], meta: dict[str, Any] | None
) -> tuple[Any, Any, bool]:
    """(args, kwargs, anything hidden) as the dashboard may show them."""
    sensitive = (meta or {}).get("sensitive")
    if sensitive is True:
        return MASK, MASK, True
    names = set(sensitive) if isinstance(sensitive, list) else set()
    hidden = False
    shown: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in names or _SECRET_NAME.search(key):
            shown[key], hidden = MASK, True
        else:
            shown[key] = _redact_value(value)
    return [_redact_value(a) for a in args], shown, hidden


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {
            k: MASK if _SECRET_NAME.search(str(k)) else _redact_value(v) for k, v in value.items()
        }
    if isinstance(value, list):
        return [_redact_value(v) for v in value]
    return value
