"""Kinds of option values: how each is read from a flag (``parse``: an
``argparse.ArgumentTypeError`` whose text is the ``taskq:`` line's), read from a TOML value
(``load``: a ``ValueError`` with the text after the key), checked once typed (``check``),
written back as a flag's text (``dump``) and shown in the docs (``show``); and the value
parsers every ``taskq`` command's flags share (``seconds``, ``positive_int``, ...).
``taskq.options`` declares options with these kinds."""

from __future__ import annotations

import argparse
import math
from typing import Any, cast
from uuid import UUID

from .validation import QUEUE_NAME

# -- the value parsers of flags ------------------------------------------------------------


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
    if not value >= 0 or value == math.inf:
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


def uuid(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a UUID, got {text!r}") from None


# -- kinds of values -------------------------------------------------------------------


def describe(value: Any) -> str:
    """A TOML value's type, for a message: ``a string``, ``an integer``, ..."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a float"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


class Kind:
    """How one kind of option value is read, checked and written."""

    metavar: str | None = None
    toml_type = ""  # for the docs: "float > 0 (seconds)"
    repeatable = False  # the flag may be given several times (the docs' usage says ``...``)

    def parse(self, text: str) -> Any:
        """A flag's text (the text itself, unless the kind reads it)."""
        return text

    def load(self, value: Any) -> Any:
        """A TOML value; ``ValueError`` with the text after the key."""
        problem = self.check(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    def check(self, value: Any) -> str | None:
        """None when ``value`` is valid, else what is wrong (``must be ...``)."""
        return None

    def dump(self, value: Any) -> list[str]:
        """The flag's arguments for ``value`` (after the flag itself)."""
        return [str(value)]

    def argument(self, default: Any, required: bool) -> dict[str, Any]:
        """How argparse takes the flag: ``add_argument``'s keywords besides its name and
        help."""
        return {
            "type": self.parse,
            "default": default,
            "required": required,
            "metavar": self.metavar,
        }

    def from_flag(self, value: Any) -> Any:
        """The value as argparse gives it, as the option holds it."""
        return value

    def argv(self, flag: str, value: Any) -> list[str]:
        """The command line that gives the option ``value`` (a child's)."""
        return [flag, *self.dump(value)]

    def show(self, value: Any) -> str:
        """``value`` in the docs' default column."""
        return "none" if value is None else f"`{value}`"


class Seconds(Kind):
    metavar = "S"

    def __init__(self, *, positive: bool = False, forever: bool = False) -> None:
        self.positive = positive
        self.forever = forever
        bound = "> 0" if positive else ">= 0"
        self.toml_type = f"float {bound} (seconds)" + (' or `"forever"`' if forever else "")
        if forever:
            self.metavar = "S|forever"

    def parse(self, text: str) -> float | None:
        if self.forever:
            return seconds_or_forever(text)
        return positive_seconds(text) if self.positive else seconds(text)

    def load(self, value: Any) -> float | None:
        if self.forever and value == "forever":
            return None
        what = 'a number of seconds or "forever"' if self.forever else "a number of seconds"
        if isinstance(value, bool) or not isinstance(value, int | float):
            if self.forever and isinstance(value, str):
                raise ValueError(f"must be {what}, got {value!r}")
            raise ValueError(f"must be {what}, not {describe(value)}")
        return cast(float, super().load(float(value)))

    def check(self, value: Any) -> str | None:
        if value is None and self.forever:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number of seconds, not {describe(value)}"
        if not math.isfinite(value) or value < 0 or (self.positive and value == 0):
            return f"must be {'> 0' if self.positive else '>= 0'}, got {value:g}"
        return None

    def dump(self, value: Any) -> list[str]:
        return ["forever" if value is None else repr(float(value))]

    def show(self, value: Any) -> str:
        if value is None:
            return "`forever`" if self.forever else "none"
        number = f"{value:.0f}" if float(value).is_integer() else f"{value:g}"
        return f"`{number}`" + (f" ({duration_text(value)})" if value >= 60 else "")


class Integer(Kind):
    metavar = "N"

    def __init__(
        self, *, minimum: int, maximum: int | None = None, metavar: str | None = None
    ) -> None:
        self.minimum = minimum
        self.maximum = maximum
        self.metavar = metavar or "N"
        self.toml_type = f"int >= {minimum}" if maximum is None else f"int {minimum}-{maximum}"

    def parse(self, text: str) -> int:
        value = integer(text)
        if value < self.minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise argparse.ArgumentTypeError(
                f"expected an integer between {self.minimum} and {self.maximum}, got {value}"
            )
        return value

    def load(self, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"must be an integer, not {describe(value)}")
        return cast(int, super().load(value))

    def check(self, value: Any) -> str | None:
        if value is None:
            return None  # the option's own "none" (its default)
        if isinstance(value, bool) or not isinstance(value, int):
            return f"must be an integer, not {describe(value)}"
        if value < self.minimum or (self.maximum is not None and value > self.maximum):
            if self.maximum is None:
                return f"must be >= {self.minimum}, got {value}"
            return f"must be between {self.minimum} and {self.maximum}, got {value}"
        return None


class Port(Integer):
    def __init__(self) -> None:
        super().__init__(minimum=0, maximum=65535)

    def parse(self, text: str) -> int:
        return port(text)


class Prefetch(Kind):
    metavar = "N|auto"
    toml_type = 'int >= 0 or `"auto"`'

    def parse(self, text: str) -> int | None:
        return prefetch(text)

    def load(self, value: Any) -> int | None:
        if value == "auto":
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f'must be an integer >= 0 or "auto", got {value!r}')
        return cast(int, super().load(value))

    def check(self, value: Any) -> str | None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            return f"must be an integer >= 0 or auto, not {describe(value)}"
        if value is not None and value < 0:
            return f"must be >= 0, got {value}"
        return None

    def dump(self, value: Any) -> list[str]:
        return ["auto" if value is None else str(value)]

    def show(self, value: Any) -> str:
        return "`auto`" if value is None else f"`{value}`"


class Switch(Kind):
    """A flag without a value (``store_true``); ``true``/``false`` in TOML."""

    toml_type = "bool"

    def check(self, value: Any) -> str | None:
        if not isinstance(value, bool):
            return f"must be true or false, not {describe(value)}"
        return None

    def argument(self, default: Any, required: bool) -> dict[str, Any]:
        return {"action": "store_true", "default": default}

    def argv(self, flag: str, value: Any) -> list[str]:
        return [flag] if value else []

    def show(self, value: Any) -> str:
        return "`true`" if value else "`false`"


class Text(Kind):
    toml_type = "string"

    def __init__(self, metavar: str) -> None:
        self.metavar = metavar

    def check(self, value: Any) -> str | None:
        if not isinstance(value, str) or not value.strip():
            return f"must be a non-empty string, not {describe(value)}"
        return None


class Id(Kind):
    metavar = "UUID"
    toml_type = "UUID"

    def parse(self, text: str) -> UUID:
        return uuid(text)

    def check(self, value: Any) -> str | None:
        return None if value is None or isinstance(value, UUID) else "must be a UUID"


class Queues(Kind):
    """Queue names: ``a,b`` on the command line, an array in TOML."""

    metavar = "A,B"
    toml_type = "array of >= 1 queue names"

    def parse(self, text: str) -> tuple[str, ...]:
        return queue_list(text)

    def load(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(q, str) for q in value):
            raise ValueError(f"must be an array of strings, not {describe(value)}")
        if not value:
            raise ValueError("must name at least one queue")
        return cast(tuple[str, ...], super().load(tuple(value)))

    def check(self, value: Any) -> str | None:
        for queue in value:
            if not QUEUE_NAME.match(queue):
                return f"invalid queue name {queue!r} (letters, digits, _ . -; at most 100)"
        if len(set(value)) != len(value):
            return "lists a queue twice"
        return None

    def dump(self, value: Any) -> list[str]:
        return [",".join(value)]

    def show(self, value: Any) -> str:
        return ", ".join(f"`{q}`" for q in value) if value else "none"


class References(Kind):
    """``MODULE:ATTR`` references, a repeatable flag; an array of strings in TOML."""

    metavar = "MODULE:ATTR"
    toml_type = "array of `MODULE:ATTR` strings"
    repeatable = True

    def load(self, value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(r, str) for r in value):
            raise ValueError(f"must be an array of strings, not {describe(value)}")
        return cast(tuple[str, ...], super().load(tuple(value)))

    def check(self, value: Any) -> str | None:
        for ref in value:
            if not isinstance(ref, str) or ":" not in ref:
                return f"must be MODULE:ATTR references, got {ref!r}"
        return None

    def argument(self, default: Any, required: bool) -> dict[str, Any]:
        return {"action": "append", "default": list(default or ()), "metavar": self.metavar}

    def from_flag(self, value: Any) -> tuple[str, ...]:
        return tuple(value)

    def argv(self, flag: str, value: Any) -> list[str]:
        return [part for ref in value for part in (flag, ref)]

    def show(self, value: Any) -> str:
        return "none" if not value else ", ".join(f"`{r}`" for r in value)


_UNITS = ((86400, "day", "days"), (3600, "h", "h"), (60, "min", "min"))


def duration_text(seconds: float | None) -> str:
    """A retention or an interval for people: ``7 days``, ``10 min``, ``90 s``; None is
    ``forever``."""
    if seconds is None:
        return "forever"
    for size, one, many in _UNITS:
        if seconds >= size and seconds % size == 0:
            n = int(seconds // size)
            return f"{n} {one if n == 1 else many}"
    return f"{seconds:g} s"
