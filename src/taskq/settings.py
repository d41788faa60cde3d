"""Where a process finds its store: ``TASKQ_DSN``, ``TASKQ_DSN_FILE``, ``TASKQ_SCHEMA``.

Documented aliases, the names of the workgroup documentation taskq follows:
``TASKQ_PG_DSN`` for ``TASKQ_DSN`` and ``TASKQ_SCHEMA_NAME`` for ``TASKQ_SCHEMA``. A name
and its alias set to different values is a ``ConfigError`` (never a silent pick).
``TASKQ_PG_DSN_DIRECT`` is a direct connection to Postgres past a transaction pooler
(PgBouncer) for what needs a session: a Postgres store's LISTEN when ``TASKQ_DSN`` is
pooled, and the workgroup's health checks (after ``health_pg_dsn``).
``TASKQ_RELOAD_INTERVAL`` makes a worker re-read ``TASKQ_DSN_FILE`` every so many
seconds (for platforms that cannot send SIGHUP).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from . import redaction
from .exceptions import ConfigError, InvalidDSN

DEFAULT_DSN = "sqlite:///taskq.sqlite3"
DEFAULT_SCHEMA = "taskq"
#: name -> its documented alias
ALIASES = {"TASKQ_DSN": "TASKQ_PG_DSN", "TASKQ_SCHEMA": "TASKQ_SCHEMA_NAME"}
HEALTH_DSN_ENV = "TASKQ_PG_DSN_DIRECT"
RELOAD_INTERVAL_ENV = "TASKQ_RELOAD_INTERVAL"
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class StoreSettings:
    dsn: str
    schema: str
    #: ``TASKQ_PG_DSN_DIRECT``: used (and checked) only when ``dsn`` goes through a pooler
    direct_dsn: str | None = None

    @property
    def kind(self) -> str:
        return dsn_kind(self.dsn)


def validate_schema(schema: str) -> str:
    if not _IDENTIFIER.match(schema):
        raise ConfigError(
            f"invalid schema name {schema!r}: use lower-case letters, digits and _ "
            "(at most 63, not starting with a digit)"
        )
    return schema


def dsn_kind(dsn: str) -> str:
    scheme = dsn.split(":", 1)[0].lower() if ":" in dsn else ""
    if scheme in ("postgresql", "postgres"):
        return "postgres"
    if scheme == "sqlite":
        return "sqlite"
    raise InvalidDSN(f"invalid DSN {redact(dsn)!r}: expected postgresql://... or sqlite:///path")


def sqlite_path(dsn: str) -> str:
    """``sqlite:///rel/path`` -> ``rel/path``; ``sqlite:////abs/path`` -> ``/abs/path``."""
    if not dsn.lower().startswith("sqlite:///"):
        raise InvalidDSN(f"invalid SQLite DSN {redact(dsn)!r}: expected sqlite:///path/to/file")
    path = dsn[len("sqlite:///") :]
    if not path:
        raise InvalidDSN(f"invalid SQLite DSN {redact(dsn)!r}: no file path")
    return path


def read_dsn_file(path: str) -> str:
    try:
        text = Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read TASKQ_DSN_FILE {path!r}: {exc.strerror}") from None
    if not text:
        raise ConfigError(f"TASKQ_DSN_FILE {path!r} is empty")
    return text


def env_setting(name: str, env: Mapping[str, str] | None = None) -> str | None:
    """``name`` from the environment, or its documented alias (``ALIASES``); both set to
    different values is a ``ConfigError`` naming the two."""
    env = os.environ if env is None else env
    value = env.get(name) or None
    alias = ALIASES.get(name)
    other = env.get(alias) or None if alias is not None else None
    if value is not None and other is not None and value != other:
        shown = redact if name == "TASKQ_DSN" else str
        raise ConfigError(
            f"{name} ({shown(value)!r}) and its alias {alias} ({shown(other)!r}) are both "
            "set, to different values: set only one of them"
        )
    return value if value is not None else other


def env_dsn(env: Mapping[str, str] | None = None) -> str | None:
    """The DSN the environment gives: ``TASKQ_DSN_FILE``'s content, else ``TASKQ_DSN`` /
    ``TASKQ_PG_DSN``; None when neither is set."""
    env = os.environ if env is None else env
    dsn_file = env.get("TASKQ_DSN_FILE")
    return read_dsn_file(dsn_file) if dsn_file else env_setting("TASKQ_DSN", env)


def reload_interval(env: Mapping[str, str] | None = None) -> float | None:
    """``TASKQ_RELOAD_INTERVAL`` in seconds (None: unset); it needs ``TASKQ_DSN_FILE``."""
    env = os.environ if env is None else env
    raw = (env.get(RELOAD_INTERVAL_ENV) or "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0 < seconds < math.inf:
        raise ConfigError(f"{RELOAD_INTERVAL_ENV}={raw!r} is not a number of seconds > 0")
    if not env.get("TASKQ_DSN_FILE"):
        raise ConfigError(f"{RELOAD_INTERVAL_ENV} re-reads TASKQ_DSN_FILE, which is not set")
    return seconds


def resolve(dsn: str | None = None, schema: str | None = None) -> StoreSettings:
    """Explicit values win, then ``TASKQ_DSN_FILE``, ``TASKQ_DSN`` (or its alias
    ``TASKQ_PG_DSN``), then the default; the schema likewise (``TASKQ_SCHEMA_NAME``).
    ``TASKQ_PG_DSN_DIRECT`` comes along; a Postgres store uses it (and checks that it
    reaches the same database) only when its DSN turns out to go through a pooler."""
    if dsn is None:
        dsn = env_dsn() or DEFAULT_DSN
    direct = os.environ.get(HEALTH_DSN_ENV) or None
    dsn_kind(dsn)  # validates the scheme
    schema = validate_schema(schema or env_setting("TASKQ_SCHEMA") or DEFAULT_SCHEMA)
    return StoreSettings(dsn=dsn, schema=schema, direct_dsn=direct)


def redact(dsn: str) -> str:
    """The DSN without its password, for logs and error messages (``redaction.dsn``)."""
    return redaction.dsn(dsn)
