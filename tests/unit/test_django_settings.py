"""``settings.TASKQ`` and the DSN of a Django database, without a Django project (the
acceptance tests in tests/acceptance/test_django_app.py run real ones)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from psycopg.conninfo import conninfo_to_dict

from taskq import ConfigError
from taskq.contrib.django.conf import REGISTRY, TaskqSettings, parse, settings_table
from taskq.contrib.django.db import dsn_of
from taskq.settings import dsn_kind


def test_no_settings_are_the_defaults() -> None:
    assert parse(None) == parse({}) == TaskqSettings()
    assert REGISTRY == "taskq.contrib.django.actors:registry"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"ACTOR": "x:y"}, "unknown key(s) 'ACTOR'"),
        ({"DATABASE": 1}, "settings.TASKQ['DATABASE'] must be a str"),
        ({"JOIN_ATOMIC": "yes"}, "settings.TASKQ['JOIN_ATOMIC'] must be a bool"),
        ({"WORKER": True}, "settings.TASKQ['WORKER'] must be a dict"),
        ({"ACTORS": "shop.tasks"}, 'must be "MODULE:ATTR"'),
        ({"SCHEMA": "Bad-Name"}, "invalid schema name"),
        ([("DATABASE", "x")], "settings.TASKQ must be a dict"),
    ],
)
def test_a_bad_setting_is_named(raw: object, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse(raw)


def test_the_postgres_dsn_keeps_every_connection_parameter() -> None:
    dsn = dsn_of(
        "postgresql",
        {
            "NAME": "app db",
            "USER": "me",
            "PASSWORD": "p@ss:/ w",
            "HOST": "db.internal",
            "PORT": 6432,
            "OPTIONS": {"sslmode": "require", "application_name": "web app", "pool": True},
        },
    )
    assert dsn_kind(dsn) == "postgres"
    assert conninfo_to_dict(dsn) == {
        "dbname": "app db",
        "user": "me",
        "password": "p@ss:/ w",
        "host": "db.internal",
        "port": "6432",
        "sslmode": "require",
        "application_name": "web app",  # Django's own OPTIONS (pool) are left out
    }
    socket = dsn_of("postgresql", {"NAME": "app", "HOST": "/var/run/postgresql"})
    assert conninfo_to_dict(socket) == {"dbname": "app", "host": "/var/run/postgresql"}


def test_a_sqlite_database_is_its_file_and_memory_is_refused(tmp_path) -> None:
    assert dsn_of("sqlite", {"NAME": tmp_path / "db.sqlite3"}) == f"sqlite:///{tmp_path}/db.sqlite3"
    for name in (":memory:", "file:memorydb_default?mode=memory&cache=shared"):
        with pytest.raises(ConfigError, match="in-memory SQLite"):
            dsn_of("sqlite", {"NAME": name})
    with pytest.raises(ConfigError, match="mysql backend"):
        dsn_of("mysql", {"NAME": "x"})


def test_the_docs_show_the_settings_table_of_the_code() -> None:
    """docs/django.md's table is ``settings_table()`` verbatim: a key added, renamed or
    described anew in conf.py fails here until the page says the same."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "django.md").read_text()
    found = re.search(
        r"<!-- settings table:.*?-->\n(.*?)<!-- end of settings table -->", page, re.S
    )
    assert found, "docs/django.md lost its settings table markers"
    assert found.group(1) == settings_table(), (
        "regenerate it: python -c 'from taskq.contrib.django.conf import settings_table; "
        'print(settings_table(), end="")\''
    )
