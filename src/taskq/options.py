"""Options declared once: a field of a frozen dataclass (``WorkerConfig``) declared with
``option``, and every front end made from that one declaration.

An option has its default, its ``Kind`` (``taskq.kinds``: the type and the check), its
help, and whether it has a flag and a TOML key. Its name is the field name; its flag is
``--`` and the name with ``-`` for ``_``; its TOML key is the name. From that one
declaration (Oban's ``Config`` and httpx's ``_config.py`` read side by side):

- ``add_arguments`` builds the argparse flags (``taskq worker``, ``manage.py
  taskq_worker``) and ``from_namespace`` the values they parsed;
- ``from_mapping`` reads a TOML table (a workgroup's ``[defaults]`` and ``[[workers]]``)
  with the messages a file's author needs (``"lease" must be > 0, got 0``);
- ``to_argv`` writes a value back as flags (a workgroup child's command line);
- ``problems`` checks a built value field by field (a config made in Python too);
- ``flag_table`` and ``toml_table`` are the docs' tables (``make docs``).
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Any, TypeVar

from .kinds import Kind

T = TypeVar("T")


# -- options -------------------------------------------------------------------------------


class Option:
    """One option: its kind, help, and where it can be set (see the module's docstring)."""

    __slots__ = (
        "default",
        "exclusive",
        "flag",
        "help",
        "kind",
        "name",
        "required",
        "shown",
        "toml",
    )

    def __init__(
        self,
        kind: Kind,
        help: str,
        *,
        flag: bool = True,
        toml: bool = True,
        shown: str | None = None,
        exclusive: str | None = None,
        required: bool = False,
    ) -> None:
        self.name = ""  # the field's, set by ``options_of``
        self.default: Any = None
        self.kind = kind
        self.help = help
        self.flag = flag
        self.toml = toml
        self.shown = shown  # the default in words, when the value alone says too little
        self.exclusive = exclusive  # flags of one mutually exclusive group share a name
        self.required = required

    @property
    def flag_name(self) -> str:
        return flag(self.name)

    @property
    def default_text(self) -> str:
        return self.shown or self.kind.show(self.default)


def option(
    default: T,
    kind: Kind,
    help: str,
    *,
    flag: bool = True,
    toml: bool = True,
    shown: str | None = None,
    exclusive: str | None = None,
) -> T:
    """A dataclass field that is an option (its default, its kind, its help)."""
    meta = Option(kind, help, flag=flag, toml=toml, shown=shown, exclusive=exclusive)
    return dataclasses.field(default=default, metadata={"option": meta})


def required(kind: Kind, help: str, *, toml: bool = True) -> Any:
    """A dataclass field that is a required option (no default)."""
    meta = Option(kind, help, toml=toml, required=True)
    return dataclasses.field(metadata={"option": meta})


_cache: dict[type, tuple[Option, ...]] = {}


def options_of(cls: type) -> tuple[Option, ...]:
    """The options of a dataclass declared with ``option``, in field order."""
    found = _cache.get(cls)
    if found is None:
        out = []
        for f in dataclasses.fields(cls):
            meta = f.metadata.get("option")
            if isinstance(meta, Option):
                meta.name = f.name
                meta.default = None if f.default is dataclasses.MISSING else f.default
                out.append(meta)
        found = _cache[cls] = tuple(out)
    return found


# -- the front ends --------------------------------------------------------------------------


def add_arguments(
    parser: argparse.ArgumentParser, cls: type, defaults: Mapping[str, Any] | None = None
) -> None:
    """A flag for every option of ``cls`` that has one; ``defaults`` override the declared
    ones (a required option with a default there is not required)."""
    defaults = defaults or {}
    groups: dict[str, Any] = {}
    for opt in options_of(cls):
        if not opt.flag:
            continue
        target: Any = parser
        if opt.exclusive is not None:
            target = groups.get(opt.exclusive)
            if target is None:
                target = groups[opt.exclusive] = parser.add_mutually_exclusive_group()
        default = defaults.get(opt.name, opt.default)
        help = opt.help
        if opt.shown is not None:
            help = f"{help} (default: {opt.shown})"
        elif default is None and not opt.required:
            help = f"{help} (default: none)"
        required = opt.required and opt.name not in defaults
        target.add_argument(opt.flag_name, help=help, **opt.kind.argument(default, required))


def from_namespace(ns: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The values of ``cls``'s options in parsed flags (those with a flag)."""
    values = {}
    for opt in options_of(cls):
        if opt.flag and hasattr(ns, opt.name):
            value = getattr(ns, opt.name)
            values[opt.name] = opt.kind.from_flag(value)
    return values


def from_mapping(
    table: Mapping[str, Any], cls: type, report: Callable[[str], None]
) -> dict[str, Any]:
    """The values of ``cls``'s TOML options in ``table`` (only the keys it has); each bad
    value is reported as ``"key" must be ...`` and left out."""
    values = {}
    for opt in options_of(cls):
        if not opt.toml or opt.name not in table:
            continue
        try:
            values[opt.name] = opt.kind.load(table[opt.name])
        except ValueError as exc:
            report(f'"{opt.name}" {exc}')
    return values


def toml_keys(cls: type) -> set[str]:
    return {opt.name for opt in options_of(cls) if opt.toml}


def to_argv(values: Any, cls: type) -> list[str]:
    """The flags that give a value of ``cls`` its options (those not at their default)."""
    argv: list[str] = []
    for opt in options_of(cls):
        if not opt.flag:
            continue
        value = getattr(values, opt.name)
        if value == opt.default and not opt.required:
            continue
        argv += opt.kind.argv(opt.flag_name, value)
    return argv


def problems(
    values: Any, cls: type, name: Callable[[str], str], only: Collection[str] | None = None
) -> list[str]:
    """What is wrong with each option of a built value (or with those in ``only``), field
    by field, each named by ``name`` (``flag``: ``--lease``; ``key``: ``"lease"``)."""
    found = []
    for opt in options_of(cls):
        if only is not None and opt.name not in only:
            continue
        value = getattr(values, opt.name)
        if value is None and opt.default is None:
            continue  # the option's "none" (off, the worker's own default)
        problem = opt.kind.check(value)
        if problem is not None:
            found.append(f"{name(opt.name)} {problem}")
    return found


def flag(name: str) -> str:
    """An option's name as its flag: ``--heartbeat-interval``."""
    return "--" + name.replace("_", "-")


def key(name: str) -> str:
    """An option's name as a TOML key in a message: ``"heartbeat_interval"``."""
    return f'"{name}"'


def flag_table(cls: type) -> str:
    """The docs' table of flags."""
    rows = ["| flag | default | meaning |", "|---|---|---|"]
    for opt in options_of(cls):
        if not opt.flag:
            continue
        flag = opt.flag_name + (f" {opt.kind.metavar}" if opt.kind.metavar else "")
        default = "required" if opt.required else opt.default_text
        rows.append(f"| `{flag.replace('|', chr(92) + '|')}` | {default} | {opt.help} |")
    return "\n".join(rows) + "\n"


def toml_table(cls: type) -> str:
    """The docs' table of TOML keys."""
    rows = ["| key | type | default | flag |", "|---|---|---|---|"]
    for opt in options_of(cls):
        if opt.toml:
            flag = f"`{opt.flag_name}`" if opt.flag else "-"
            rows.append(f"| `{opt.name}` | {opt.kind.toml_type} | {opt.default_text} | {flag} |")
    return "\n".join(rows) + "\n"


def synopsis(cls: type, command: str, width: int = 92) -> str:
    """The docs' usage line of ``command`` (``taskq worker``): every flag, wrapped."""
    words = []
    for opt in options_of(cls):
        if not opt.flag:
            continue
        word = opt.flag_name + (f" {opt.kind.metavar}" if opt.kind.metavar else "")
        if opt.kind.repeatable:
            word += " ..."
        words.append(word if opt.required else f"[{word}]")
    lines, line = [], command
    for word in words:
        if len(line) + 1 + len(word) > width:
            lines.append(line)
            line = " " * len(command)
        line += " " + word
    return "\n".join([*lines, line]) + "\n"
