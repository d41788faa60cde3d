"""The ``taskq`` command's argparse pieces: a parser whose usage error is one line, help
that shows every option's default, and the value types flags share (from
``taskq.options``)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any, NoReturn, TypeAlias

from .. import exit_codes
from ..exceptions import ConfigError
from ..jobs import Rate

# the value parsers the commands' flags take, declared with the options (re-exported)
from ..kinds import integer, positive_int, positive_seconds, seconds
from ..validation import MAX_JSON_DEPTH
from .output import one_line


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
        self.exit(exit_codes.USAGE, f"taskq: {one_line(message)} (see `{self.prog} --help`)\n")


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


def rate(text: str) -> Rate:
    try:
        return Rate.parse(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def json_flag(parser: argparse.ArgumentParser, what: str) -> None:
    """The ``--json`` flag every listing command has."""
    parser.add_argument("--json", action="store_true", help=what)


__all__ = [
    "Parser",
    "Subparsers",
    "integer",
    "json_arg",
    "json_flag",
    "positive_int",
    "positive_seconds",
    "rate",
    "seconds",
    "subcommands",
]
