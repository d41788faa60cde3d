"""What the ``taskq`` command prints: JSON, fixed-width tables, and the one ``taskq: ...``
error line on stderr; and the store client each command runs against."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from .. import exit_codes, redaction

if TYPE_CHECKING:
    from ..client import AsyncClient

T = TypeVar("T")

EXIT_OK = exit_codes.OK
EXIT_ERROR = exit_codes.ERROR
EXIT_BROKEN_PIPE = exit_codes.BROKEN_PIPE
EXIT_FINISHED = exit_codes.ALREADY_FINISHED


def with_client(ns: argparse.Namespace, action: Callable[[AsyncClient], Awaitable[T]]) -> T:
    """Run ``action`` against a client for ``--dsn``/``--schema``, closed afterwards.
    (The client is imported here, by the commands that use one: building the parser,
    and ``taskq worker``, do not load it.)"""
    from ..client import AsyncClient

    async def go() -> T:
        async with AsyncClient(ns.dsn, schema=ns.schema) as client:
            return await action(client)

    return asyncio.run(go())


def one_line(text: str) -> str:
    """``text`` on one line: a control character (a newline, a carriage return from a
    pasted argument, ...) shown as its escape, never acted on by the terminal."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def error(message: object) -> None:
    """The one line a user mistake gets, on stderr (passwords masked: ``redaction``)."""
    print(f"taskq: {one_line(redaction.text(str(message)) or '')}", file=sys.stderr)


def warn(message: object) -> None:
    """A warning about what the user asked for (the command still does it), on stderr."""
    print(f"taskq: warning: {message}", file=sys.stderr)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, default=str, ensure_ascii=False))


def print_table(row: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """``row`` is a format string with one ``{}`` field a column (``{:<20.20}`` pads and
    cuts a text column to 20); the header and every row are printed through it."""
    print(row.format(*header))
    for values in rows:
        print(row.format(*values))
