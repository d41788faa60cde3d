"""``settings.TASKQ``: every key, its default and its meaning, declared once.

``load()`` reads and checks the project's settings (an unknown key or a value of the wrong
kind is a ``ConfigError`` naming it); ``settings_table()`` is the table docs/django.md
shows (a test compares them). The worker options (``WORKER``) are the ``taskq worker``
flags, checked by the same parser as the command line's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ...exceptions import ConfigError
from ...settings import validate_schema

#: what a worker of the project is given as ``--actors``: ``ACTORS`` when set, else every
#: taskq.Registry in the installed apps' ``tasks`` modules, loaded after ``django.setup()``
#: (taskq/contrib/django/actors.py), in the worker and in its CPU pool's processes alike
REGISTRY = "taskq.contrib.django.actors:registry"


@dataclass(frozen=True, slots=True)
class Setting:
    key: str
    default: Any
    kinds: tuple[type, ...]
    shown_default: str  # the default as the docs say it
    meaning: str


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "ACTORS",
        None,
        (str,),
        "every `taskq.Registry` in the installed apps' `tasks` modules",
        'the registry workers serve, as `"MODULE:ATTR"` (e.g. `"shop.tasks:registry"`)',
    ),
    Setting(
        "DATABASE",
        "default",
        (str,),
        '`"default"`',
        "the `DATABASES` alias whose database holds taskq's tables: taskq's DSN is built "
        "from its settings, and enqueues join its `atomic()` blocks",
    ),
    Setting(
        "SCHEMA",
        None,
        (str,),
        '`TASKQ_SCHEMA`, else `"taskq"`',
        "the Postgres schema of taskq's tables (SQLite has none)",
    ),
    Setting(
        "JOIN_ATOMIC",
        True,
        (bool,),
        "`True`",
        "`client()` enqueues on Django's connection inside `transaction.atomic()` (the "
        "job exists only if the block commits); `False`: on taskq's own connection",
    ),
    Setting(
        "MIGRATE",
        True,
        (bool,),
        "`True`",
        "`manage.py migrate` on `DATABASE` also runs taskq's migrations (so does the test "
        "runner's test database); `False`: only `manage.py taskq_migrate` does",
    ),
    Setting(
        "WORKER",
        {},
        (dict,),
        "`{}`",
        "`manage.py taskq_worker`'s defaults: `taskq worker` flags as keys without the "
        'dashes (`{"queues": ["mail"], "max_concurrency": 8}`); flags given win',
    ),
)
_BY_KEY = {s.key: s for s in SETTINGS}


@dataclass(frozen=True, slots=True)
class TaskqSettings:
    """``settings.TASKQ``, checked, with the defaults filled in."""

    actors: str | None = None
    database: str = "default"
    schema: str | None = None
    join_atomic: bool = True
    migrate: bool = True
    worker: Mapping[str, Any] = field(default_factory=dict)


def parse(raw: Any) -> TaskqSettings:
    """Check a ``settings.TASKQ`` value (None: all defaults)."""
    if raw is None:
        return TaskqSettings()
    if not isinstance(raw, Mapping):
        raise ConfigError(f"settings.TASKQ must be a dict, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in _BY_KEY)
    if unknown:
        raise ConfigError(
            f"settings.TASKQ has unknown key(s) {', '.join(map(repr, unknown))}; "
            f"the keys are {', '.join(s.key for s in SETTINGS)}"
        )
    values: dict[str, Any] = {}
    for setting in SETTINGS:
        value = raw.get(setting.key, setting.default)
        right_kind = isinstance(value, setting.kinds) and (
            bool in setting.kinds or not isinstance(value, bool)
        )
        if value is not setting.default and not right_kind:
            kinds = " or ".join(k.__name__ for k in setting.kinds)
            raise ConfigError(f"settings.TASKQ[{setting.key!r}] must be a {kinds}, got {value!r}")
        values[setting.key.lower()] = value
    actors = values["actors"]
    if actors is not None and ":" not in actors:
        raise ConfigError(
            f"settings.TASKQ['ACTORS'] must be \"MODULE:ATTR\" of a taskq.Registry, got {actors!r}"
        )
    if values["schema"] is not None:
        validate_schema(values["schema"])
    return TaskqSettings(**values)


def load() -> TaskqSettings:
    """The project's ``settings.TASKQ``, checked."""
    from django.conf import settings

    return parse(getattr(settings, "TASKQ", None))


def settings_table() -> str:
    """The Markdown table of the keys, as docs/django.md shows it."""
    lines = ["| key | default | what it is |", "|---|---|---|"]
    lines += [f"| `{s.key}` | {s.shown_default} | {s.meaning} |" for s in SETTINGS]
    return "\n".join(lines) + "\n"
