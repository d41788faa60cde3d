"""What keeps the dashboard safe: authentication, CSRF, and nothing secret on a page.

- **Authentication.** With ``TASKQ_DASHBOARD_TOKEN`` set, every request must carry it:
  ``Authorization: Bearer <token>`` or HTTP basic auth with the token as the password
  (the user name is recorded as who acted). Compared with ``hmac.compare_digest``.
  Actions (``--allow-actions``) cannot be enabled without a token.
- **CSRF.** A random token in an ``HttpOnly; SameSite=Strict`` cookie is repeated in
  every form (``csrf`` field) or htmx request (``X-CSRF-Token``); a POST whose copy does
  not match the cookie, or whose ``Origin`` is another site, is refused.
- **Redaction** is ``taskq.redaction``'s, the same as the CLI's and the logs'.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

CSRF_COOKIE = "taskq_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


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
