"""The ``taskq`` command's argparse pieces: a parser whose usage error is one line, help
that shows every option's default, and the value types flags share."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

from .. import exit_codes
from ..exceptions import ConfigError
from ..jobs import Rate
from ..validation import MAX_JSON_DEPTH


class _Help(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already gives it."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text
            or not action.option_strings
            or action.required
            or any(action.default is off for off in (None, False, argparse.SUPPRESS))
        ):  # `is`: a default of 0 is shown, not taken for False
            return text
        if action.default in ([], {}, ()):
            return f"{text} (default: none)"
        return f"{text} (default: %(default)s)"


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the problem, and every option's
    help shows its default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Help)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(exit_codes.USAGE, f"taskq: {message} (see `{self.prog} --help`)\n")


Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def subcommands(
    parser: argparse.ArgumentParser, dest: str, metavar: str, *, required: bool = False
) -> Subparsers:
    """``parser``'s subcommands, named in ``dest``; each one a :class:`Parser`."""
    sub: Subparsers = parser.add_subparsers(dest=dest, metavar=metavar, parser_class=Parser)
    sub.required = required
    return sub


def json_arg(kind: type, what: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(
                f"{what} is not valid JSON: {exc.msg} at char {exc.pos}"
            ) from None
        except RecursionError:
            raise argparse.ArgumentTypeError(
                f"{what} nests arrays or objects deeper than {MAX_JSON_DEPTH} levels "
                "(MAX_JSON_DEPTH)"
            ) from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(
                f"{what} must be a JSON {'array' if kind is list else 'object'}"
            )
        return value

    return parse


def integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def positive_int(text: str) -> int:
    value = integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {value}")
    return value


def prefetch(text: str) -> int | None:
    return None if text == "auto" else non_negative_int(text)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number of seconds >= 0, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value == 0:
        raise argparse.ArgumentTypeError("expected a number of seconds > 0")
    return value


def seconds_or_forever(text: str) -> float | None:
    """A retention: seconds, or ``forever`` (None: never pruned)."""
    if text == "forever":
        return None
    try:
        return seconds(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a number of seconds >= 0 or 'forever', got {text!r}"
        ) from None


def port(text: str) -> int:
    value = integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port 0-65535, got {value}")
    return value


def queue_list(text: str) -> tuple[str, ...]:
    queues = tuple(q.strip() for q in text.split(",") if q.strip())
    if not queues:
        raise argparse.ArgumentTypeError("expected a comma-separated list of queue names")
    return queues


def rate(text: str) -> Rate:
    try:
        return Rate.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def uuid(text: str) -> Any:
    from uuid import UUID

    try:
        return UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a UUID, got {text!r}") from None


def json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--json`` flag every listing command has."""
    parser.add_argument("--json", action="store_true", help=what)
