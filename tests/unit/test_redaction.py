"""taskq.redaction: the one place a password is masked, in every form a DSN or an error
text carries it, and what may be shown of a job's arguments and results."""

from __future__ import annotations

import json
import logging

import pytest

from taskq import redaction
from taskq.exceptions import StoreUnavailable
from taskq.logs import ConsoleFormatter, JsonFormatter

SECRET = "hunter2"


@pytest.mark.parametrize(
    ("given", "shown"),
    [
        ("postgresql://u:hunter2@db:5432/x", "postgresql://u:***@db:5432/x"),
        ("postgresql://u:hunter2@db@host/x", "postgresql://u:***@host/x"),  # '@' in it
        (
            "postgresql://u@db/x?password=hunter2&sslmode=require",
            "postgresql://u@db/x?password=***&sslmode=require",
        ),
        (
            "postgresql://u@db/x?sslmode=require&password=hunter2",
            "postgresql://u@db/x?sslmode=require&password=***",
        ),
        ("host=db port=5432 password=hunter2 user=u", "host=db port=5432 password=*** user=u"),
        ("host=db password = 'hunter2 with spaces' user=u", "host=db password = '***' user=u"),
        ("PGPASSWORD=hunter2 psql", "PGPASSWORD=*** psql"),
        ("sslpassword=hunter2", "sslpassword=***"),
        ("{'password': 'hunter2', 'x': 1}", "{'password': '***', 'x': 1}"),
        ('{"api_token": "hunter2"}', '{"api_token": "***"}'),
        (
            'end of string in URI: "postgresql://u:hunter2@[::1/db"',
            'end of string in URI: "postgresql://u:***@[::1/db"',
        ),
        ("redis://:hunter2@localhost:6379/0", "redis://:***@localhost:6379/0"),
    ],
)
def test_every_form_of_a_password_is_masked(given: str, shown: str) -> None:
    assert redaction.text(given) == shown
    assert redaction.dsn(given) == shown


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com:8443/path?x=1",
        "http://127.0.0.1:8760/jobs?queue=default",
        "no secrets here",
        "passed 3 tests",
        "",
    ],
)
def test_text_without_a_password_is_unchanged(text: str) -> None:
    assert redaction.text(text) == text


def test_a_drivers_echo_of_part_of_a_password_is_masked() -> None:
    dsn = "host=db password='hunter2 and more' user=u"
    echoed = 'missing "=" after "hunter2" in connection info string'
    assert SECRET not in redaction.echoed(echoed, dsn)


def test_arguments_hide_secret_names_sensitive_meta_and_dsn_passwords() -> None:
    args, kwargs, hidden = redaction.arguments(
        ["postgresql://a:hunter2@db/x", {"password": SECRET, "n": 1}],
        {"api_token": SECRET, "card": "4111", "note": "ok"},
        {"sensitive": ["card"]},
    )
    assert hidden
    assert args == ["postgresql://a:***@db/x", {"password": redaction.MASK, "n": 1}]
    assert kwargs == {"api_token": redaction.MASK, "card": redaction.MASK, "note": "ok"}
    assert redaction.arguments([1], {"a": 2}, {"sensitive": True}) == (
        redaction.MASK,
        redaction.MASK,
        True,
    )
    assert redaction.result({"r": 1}, {"sensitive": True}) == redaction.MASK
    assert redaction.result({"token": "x"}, None) == {"token": redaction.MASK}


def test_a_value_nested_too_deep_is_cut_not_a_recursion_error() -> None:
    deep: list = []
    cur = deep
    for _ in range(5000):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    shown = redaction.value(deep)
    json.dumps(shown, indent=2)  # the dashboard's pretty printer: no RecursionError
    assert redaction.DEEP in json.dumps(shown, ensure_ascii=False)


def test_a_job_as_the_cli_shows_it() -> None:
    shown = redaction.job(
        {
            "id": "x",
            "args": ["a"],
            "kwargs": {"password": SECRET},
            "meta": {"sensitive": True},
            "result": 5,
            "last_error": "ValueError: postgresql://u:hunter2@db/x",
        }
    )
    assert SECRET not in json.dumps(shown)
    assert shown["args"] == shown["kwargs"] == shown["result"] == redaction.MASK


def test_taskq_error_messages_are_masked() -> None:
    error = StoreUnavailable(f"cannot connect to postgresql://u@db/x?password={SECRET}")
    assert SECRET not in str(error) and "password=***" in str(error)


@pytest.mark.parametrize("formatter", [JsonFormatter(), ConsoleFormatter()])
def test_every_log_line_is_masked(formatter: logging.Formatter) -> None:
    record = logging.LogRecord("taskq.x", logging.WARNING, __file__, 1, "job-dead", None, None)
    record.taskq_fields = {  # type: ignore[attr-defined]
        "error": f"ValueError: host=db password={SECRET}",
        "store": f"postgresql://u@db/x?password={SECRET}",
        "nested": {"api_key": SECRET, "list": [f"postgresql://u:{SECRET}@db/x"]},
        "token": SECRET,
        "count": 3,
    }
    try:
        raise RuntimeError(f"postgresql://u:{SECRET}@db/x")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    line = formatter.format(record)
    assert SECRET not in line
    assert "3" in line
