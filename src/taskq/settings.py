"""Where a process finds its store: ``TASKQ_DSN``, ``TASKQ_DSN_FILE``, ``TASKQ_SCHEMA``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from .exceptions import ConfigError, InvalidDSN

DEFAULT_DSN = "sqlite:///taskq.sqlite3"
DEFAULT_SCHEMA = "taskq"
_IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


@dataclass(frozen=True, slots=True)
class StoreSettings:
    dsn: str
    schema: str

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
        raise InvalidDSN(f"invalid SQLite DSN {dsn!r}: expected sqlite:///path/to/file")
    path = dsn[len("sqlite:///") :]
    if not path:
        raise InvalidDSN(f"invalid SQLite DSN {dsn!r}: no file path")
    return path


def read_dsn_file(path: str) -> str:
    try:
        text = Path(path).read_text().strip()
    except OSError as exc:
        raise ConfigError(f"cannot read TASKQ_DSN_FILE {path!r}: {exc.strerror}") from None
    if not text:
        raise ConfigError(f"TASKQ_DSN_FILE {path!r} is empty")
    return text


def resolve(dsn: str | None = None, schema: str | None = None) -> StoreSettings:
    """Explicit values win, then ``TASKQ_DSN_FILE``, ``TASKQ_DSN``, then the default."""
    if dsn is None:
        dsn_file = os.environ.get("TASKQ_DSN_FILE")
        dsn = read_dsn_file(dsn_file) if dsn_file else os.environ.get("TASKQ_DSN") or DEFAULT_DSN
    dsn_kind(dsn)  # validates the scheme
    schema = validate_schema(schema or os.environ.get("TASKQ_SCHEMA") or DEFAULT_SCHEMA)
    return StoreSettings(dsn=dsn, schema=schema)


def redact(dsn: str) -> str:
    """The DSN without its password, for logs and error messages."""
    try:
        parts = urlsplit(dsn)
    except ValueError:
        return "<unparseable DSN>"
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))
