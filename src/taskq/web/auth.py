"""Who is asking: the dashboard's token check, and the throttle on wrong tokens.

- ``who(request, token)``: with ``TASKQ_DASHBOARD_TOKEN`` set, every request must carry
  it, as ``Authorization: Bearer <token>`` or as the password of HTTP basic auth (the
  user name, printable and at most ``MAX_USER_CHARS``, is recorded as who acted).
  Compared in constant time.
- ``Throttle``: after ``limit`` wrong tokens from one client address within ``window``
  seconds, every request from it is answered 429 until the oldest of them is
  ``window`` old. A burst (wrong tokens less than ``window`` apart) is logged once, on
  its first failure, as ``dashboard.auth_failed`` with the client address and the basic
  auth user name (never the token). A request with no credentials at all (a browser's
  first request, before it asks) is not a failure.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.requests import Request

#: the longest basic auth user name recorded as who acted
MAX_USER_CHARS = 64
#: wrong tokens from one client within ``AUTH_WINDOW`` before it is answered 429
AUTH_FAILURES = 5
AUTH_WINDOW = 60.0
#: how many client addresses the throttle remembers at most
MAX_CLIENTS = 10_000


@dataclass(frozen=True, slots=True)
class Credentials:
    """What a request presented: ``scheme`` ("bearer" | "basic" | None when nothing),
    the basic auth ``user``, and whether it matched the token."""

    scheme: str | None
    user: str | None
    ok: bool


def credentials(request: Request, token: str) -> Credentials:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return Credentials("bearer", None, _same(value.strip(), token))
    if scheme == "basic":
        try:
            raw = base64.b64decode(value.strip(), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return Credentials("basic", None, False)
        user, _, password = raw.partition(":")
        if not (user.isprintable() and len(user) <= MAX_USER_CHARS):
            return Credentials("basic", None, False)
        return Credentials("basic", user or "basic", _same(password, token))
    return Credentials(None, None, False)


def who(request: Request, token: str | None) -> str | None:
    """The authenticated caller's name (``"token"`` for a bearer token, the basic auth
    user name), ``"anonymous"`` when no token is configured, or None."""
    if token is None:
        return "anonymous"
    given = credentials(request, token)
    if not given.ok:
        return None
    return given.user or "token"


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode("utf-8"))


@dataclass(slots=True)
class _Client:
    failures: deque[float] = field(default_factory=deque)


class Throttle:
    """Wrong tokens per client address over a sliding window (an injectable clock)."""

    def __init__(
        self,
        limit: int = AUTH_FAILURES,
        window: float = AUTH_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        max_clients: int = MAX_CLIENTS,
    ) -> None:
        self.limit = limit
        self.window = window
        self._clock = clock
        self._max_clients = max_clients
        self._clients: dict[str, _Client] = {}

    def retry_after(self, client: str) -> float | None:
        """Seconds until ``client`` may try again, or None when it is not throttled."""
        seen = self._clients.get(client)
        if seen is None:
            return None
        now = self._clock()
        while seen.failures and seen.failures[0] <= now - self.window:
            seen.failures.popleft()
        if len(seen.failures) < self.limit:
            return None
        return max(1.0, seen.failures[0] + self.window - now)

    def failed(self, client: str) -> bool:
        """Count a wrong token; True when it starts a burst (the one to log)."""
        now = self._clock()
        seen = self._clients.pop(client, None)  # re-inserted: the dict is oldest first
        if seen is None:
            seen = _Client()
            while len(self._clients) >= self._max_clients:
                del self._clients[next(iter(self._clients))]
        self._clients[client] = seen
        while seen.failures and seen.failures[0] <= now - self.window:
            seen.failures.popleft()
        first = not seen.failures  # none within the window: a new burst
        seen.failures.append(now)
        while len(seen.failures) > self.limit:
            seen.failures.popleft()
        return first
