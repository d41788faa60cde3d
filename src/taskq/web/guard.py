"""What every request to the dashboard passes before a page sees it, in order:

1. **Host allow-list** (DNS rebinding): the ``Host`` header must name the dashboard as
   it is served: the address it binds (unless a wildcard), ``localhost``,
   ``127.0.0.1``, ``::1``, or an ``--allowed-host``. Else 421 (400 without a Host).
2. **Throttle**: a client address with too many wrong tokens lately gets 429
   (``auth.Throttle``).
3. **Authentication** (``auth.who``) when a token is configured: else 401; a wrong
   token counts toward the throttle and the first of a burst logs
   ``dashboard.auth_failed``.
4. **Session and CSRF token** (``csrf``): the session cookie is set when missing; the
   page's token is bound to it and to who is asking.

And on the way out, every response carries the security headers (``SECURITY_HEADERS``:
a strict Content-Security-Policy with ``script-src 'self'``, ``nosniff``, no framing,
``Referrer-Policy``), and every response but a static file ``Cache-Control: no-store``
(pages hold job arguments and errors).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from ..events import DASHBOARD_AUTH_FAILED
from ..logs import get_logger
from . import csrf
from .auth import Throttle, credentials

log = get_logger(__name__)

CSP = "; ".join(
    (
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    )
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}
#: names every dashboard answers to, whatever it binds
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
_WILDCARDS = ("", "0.0.0.0", "::")
_NAME = re.compile(r"^[a-z0-9_.-]{1,253}$")


def served_hosts(bind: str, allowed: Iterable[str]) -> frozenset[str]:
    """The host names (lower case, no port, IPv6 without brackets) the dashboard answers."""
    names = {*LOCAL_NAMES, *(_bare(h) for h in allowed)}
    if bind not in _WILDCARDS:
        names.add(_bare(bind))
    return frozenset(n for n in names if n)


def _bare(host: str) -> str:
    host = host.strip().lower().rstrip(".")
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def valid_host(name: str) -> bool:
    """``name`` is a host name or an IP address (no scheme, no port)."""
    bare = _bare(name)
    if _NAME.match(bare):
        return True
    try:
        ipaddress.IPv6Address(bare)
    except ValueError:
        return False
    return True


def host_name(header: str) -> str | None:
    """The host of a ``Host`` header without its port, or None when it is malformed."""
    header = header.strip().lower()
    if header.startswith("["):
        name, closed, rest = header[1:].partition("]")
        if not closed or (rest and not (rest[:1] == ":" and rest[1:].isdigit())):
            return None
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return None
        return name
    name, _, port = header.partition(":")
    if not _NAME.match(name) or (port and not port.isdigit()):
        return None
    return name.rstrip(".")


def _refuse(status: int, text: str, **headers: str) -> Response:
    return PlainTextResponse(text + "\n", status_code=status, headers=headers)


class Guard(BaseHTTPMiddleware):
    def __init__(self, app: Any, *, settings: Any, secret: bytes, throttle: Throttle) -> None:
        super().__init__(app)
        self._settings = settings
        self._secret = secret
        self._hosts = served_hosts(settings.host, settings.allowed_hosts)
        self.throttle = throttle

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        response = await self._checked(request, call_next)
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        if not request.url.path.startswith("/static/"):
            response.headers["Cache-Control"] = "no-store"
        return response

    async def _checked(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        name = host_name(request.headers.get("host", ""))
        if name is None:
            return _refuse(400, "a Host header naming this dashboard is required")
        if name not in self._hosts:
            return _refuse(
                421,
                "this dashboard does not answer to that host name: start it with "
                "--allowed-host NAME to serve it under a name of its own",
            )
        client = request.client.host if request.client else "unknown"
        wait = self.throttle.retry_after(client)
        if wait is not None:
            return _refuse(
                429,
                "too many wrong tokens from this address: wait",
                **{"Retry-After": f"{wait:.0f}"},
            )
        token = self._settings.token
        caller = "anonymous"
        if token is not None:
            given = credentials(request, token)
            if not given.ok:
                if given.scheme is not None and self.throttle.failed(client):
                    log.event(
                        DASHBOARD_AUTH_FAILED,
                        client=client,
                        user=given.user,
                        scheme=given.scheme,
                        limit=self.throttle.limit,
                        window=self.throttle.window,
                    )
                return _refuse(
                    401,
                    "authentication required: TASKQ_DASHBOARD_TOKEN as a bearer token or as "
                    "the basic auth password",
                    **{"WWW-Authenticate": 'Basic realm="taskq dashboard", charset="UTF-8"'},
                )
            caller = given.user or "token"
        session = csrf.session_of(request)
        fresh = session is None
        if session is None:
            session = csrf.new_session()
        request.state.who = caller
        request.state.session = session
        request.state.csrf = csrf.token_for(self._secret, session, caller)
        response = await call_next(request)
        if fresh:
            response.set_cookie(
                csrf.SESSION_COOKIE,
                session,
                httponly=True,
                samesite="strict",
                secure=request.url.scheme == "https",
                path="/",
            )
        return response
