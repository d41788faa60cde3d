"""CSRF: tokens the server minted, bound to the browser's session and to who acts, and
POSTs only from the dashboard's own pages.

- **The session** is a random id in the ``taskq_session`` cookie (``HttpOnly``,
  ``SameSite=Strict``, ``Secure`` over HTTPS), set on the first page.
- **The token** in every form (``csrf`` field, or the ``X-CSRF-Token`` header) is
  ``HMAC-SHA256(secret, session, who)``: the secret is ``TASKQ_DASHBOARD_SECRET`` when
  set (several dashboards behind one name), else random per process. A cookie planted
  by another site on the same host (cookies are not isolated by port) is a session
  the planter has no token for: the token cannot be made without the secret, and a
  token made for one session or one user is worth nothing for another.
- **The origin**: a POST is refused unless its ``Origin`` header (or, without one, its
  ``Referer``) names this dashboard's own host and port; a missing one, ``null`` (a
  sandboxed iframe, a ``data:`` page) or any other site is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request

SESSION_COOKIE = "taskq_session"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"
SECRET_ENV = "TASKQ_DASHBOARD_SECRET"
_SESSION = re.compile(r"^[A-Za-z0-9_-]{43}$")  # 32 random bytes, base64url


def new_secret() -> bytes:
    return secrets.token_bytes(32)


def session_of(request: Request) -> str | None:
    """The request's session id, if its cookie holds a well-formed one."""
    value = request.cookies.get(SESSION_COOKIE, "")
    return value if _SESSION.match(value) else None


def new_session() -> str:
    return secrets.token_urlsafe(32)


def token_for(secret: bytes, session: str, who: str) -> str:
    mac = hmac.new(secret, f"csrf\0{session}\0{who}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode()


def token_ok(secret: bytes, session: str | None, who: str, submitted: str | None) -> bool:
    if session is None or not submitted:
        return False
    expected = token_for(secret, session, who)
    return hmac.compare_digest(expected.encode(), submitted.encode("utf-8", "replace"))


def same_origin(request: Request) -> str | None:
    """None when the request comes from this dashboard's own pages, else why not."""
    host = request.headers.get("host", "").lower()
    origin = request.headers.get("origin")
    if origin is not None:
        if origin.strip().lower() == "null":
            return "the request's Origin is null (a sandboxed frame or a local file)"
        source = origin
    else:
        referer = request.headers.get("referer")
        if not referer:
            return "the request carries neither Origin nor Referer"
        source = referer
    try:
        netloc = urlsplit(source.strip()).netloc.lower()
    except ValueError:
        netloc = ""
    if not netloc or netloc != host:
        return f"the request comes from another site ({source[:80]!r})"
    return None
