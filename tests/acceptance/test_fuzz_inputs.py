"""Hypothesis over what a user types (issue 21 item 6): the CLI's arguments and the
dashboard's query parameters and forms, on both stores. Whatever comes in: no
traceback (the CLI returns an exit code or exits through argparse, never raises), no
500 (the dashboard answers 2xx, 3xx or 4xx), and a refused request leaves the store as
it was (job counts, limits, paused queues).

The CLI runs in this process (``taskq.cli.main``), so a traceback is an exception here;
its arguments are the text a shell can pass: anything but NUL, lone surrogates standing
for bytes that are not UTF-8 included."""

from __future__ import annotations

import contextlib
import io
import json
import os
import string
from typing import Any
from urllib.parse import quote_from_bytes

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")

import functools
import operator

from starlette.testclient import TestClient

from taskq import Client
from taskq.cli import main
from taskq.web import DashboardSettings, create_app
from tests.support import dashboard_actors as actors

FUZZ = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
TOKEN = "fuzz-token-0123456789abcdef"

# text a shell can pass: no NUL; surrogates stand for bytes that are not UTF-8
shell_text = (
    st.text(
        st.characters(blacklist_characters="\x00", blacklist_categories=("Cn", "Cs")), max_size=30
    )
    | st.binary(max_size=12).filter(lambda b: b"\x00" not in b).map(os.fsdecode)
    | st.sampled_from(["", " ", "-1", "0", "2147483648", "99999999999999999999", "1e400", "nan"])
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
json_text = (
    json_values.map(json.dumps)
    | st.integers(1, 3000).map(lambda n: "[" * n + "]" * n)
    | st.sampled_from(['["\\u0000"]', '{"a": "\\u0000"}', "[", "{}", "[]", '"x"'])
    | shell_text
)


def snapshot(client: Client) -> tuple[Any, ...]:
    return (
        client.stats(),
        sorted((k, str(v)) for k, v in client.limits().items()),
        sorted(q.name for q in client.queues() if q.paused),
    )


@pytest.fixture
def client(target, store, monkeypatch) -> Any:
    del store  # migrated
    monkeypatch.setenv("TASKQ_DSN", target.dsn)
    monkeypatch.setenv("TASKQ_SCHEMA", target.schema)
    monkeypatch.delenv("TASKQ_DSN_FILE", raising=False)
    with Client(target.dsn, schema=target.schema) as c:
        c.enqueue(actors.add, 1, 2)
        yield c


def flag(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), values.map(lambda v: [name, v]))


commands = st.one_of(
    st.tuples(
        st.just(["enqueue"]),
        st.sampled_from(["add", "charge"]) | shell_text.map(lambda t: t or "x"),
        flag("--args", json_text),
        flag("--kwargs", json_text),
        flag("--meta", json_text),
        flag("--queue", shell_text),
        flag("--priority", shell_text),
        flag("--delay", shell_text),
        flag("--tag", shell_text),
        flag("--unique-key", shell_text),
    ).map(
        lambda parts: (
            [*parts[0], "--", parts[1], *functools.reduce(operator.iadd, parts[2:], [])]
            if parts[1].startswith("-")
            else [*parts[0], parts[1], *functools.reduce(operator.iadd, parts[2:], [])]
        )
    ),
    st.tuples(
        st.just(["jobs", "list"]),
        flag("--state", shell_text | st.sampled_from(["dead", "queued"])),
        flag("--queue", shell_text),
        flag("--tag", shell_text),
        flag("--limit", shell_text),
    ).map(lambda parts: functools.reduce(operator.iadd, parts, [])),
    st.tuples(
        st.sampled_from([["jobs", "show"], ["jobs", "retry"], ["jobs", "cancel"]]), shell_text
    ).map(lambda p: [*p[0], "--", p[1]]),
    st.tuples(
        st.just(["queues", "limit"]),
        shell_text.map(lambda t: t or "q"),
        flag("--concurrency", shell_text),
        flag("--rate", shell_text | st.sampled_from(["5/second", "0/minute", "3/fortnight"])),
    ).map(
        lambda p: (
            [*p[0], "--", p[1], *p[2], *p[3]]
            if not p[2] and not p[3]
            else [*p[0], *p[2], *p[3], "--", p[1]]
        )
    ),
    st.tuples(st.sampled_from([["queues", "pause"], ["queues", "resume"]]), shell_text).map(
        lambda p: [*p[0], "--", p[1]]
    ),
)


@FUZZ
@given(argv=commands)
def test_the_cli_never_raises_and_a_refusal_changes_nothing(
    client: Client, argv: list[str]
) -> None:
    before = snapshot(client)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse: a usage error, one line
            code = exc.code if isinstance(exc.code, int) else 2
    assert "Traceback" not in err.getvalue()
    if code != 0:
        lines = err.getvalue().strip().splitlines()
        assert lines and all(line.startswith("taskq: ") for line in lines), err.getvalue()
        if argv[:2] not in (["jobs", "retry"], ["jobs", "cancel"]):
            assert snapshot(client) == before, argv


# -- the dashboard --------------------------------------------------------------------------

PARAMS = ["state", "queue", "actor", "tag", "error", "before", "done", "q", "id", "meta", "args"]
raw_value = st.binary(max_size=20).map(lambda b: quote_from_bytes(b, safe="")) | shell_text.map(
    lambda t: quote_from_bytes(t.encode("utf-8", "surrogateescape"), safe="")
)
query = st.lists(st.tuples(st.sampled_from(PARAMS), raw_value), max_size=4).map(
    lambda pairs: "&".join(f"{k}={v}" for k, v in pairs)
)
paths = st.sampled_from(
    ["/", "/jobs", "/dead", "/queues", "/workers", "/workflows", "/schedules", "/actors"]
) | st.text(string.ascii_letters + string.digits + "-", max_size=40).map(lambda t: f"/jobs/{t}")


@FUZZ
@given(path=paths, qs=query)
def test_no_query_string_gets_a_500(target, client: Client, path: str, qs: str) -> None:
    app = create_app(
        DashboardSettings(dsn=target.dsn, schema=target.schema, allowed_hosts=("testserver",))
    )
    with TestClient(app, raise_server_exceptions=False) as web:
        response = web.get(f"{path}?{qs}")
    assert response.status_code < 500, (path, qs, response.status_code, response.text[:300])


form_value = shell_text | st.sampled_from(["dead", "/", "//evil", "1", "x" * 300])
forms = st.dictionaries(
    st.sampled_from(["id", "all", "queue", "next", "concurrency", "rate", "workflow"]),
    form_value,
    max_size=4,
)
actions = st.sampled_from(
    [
        "/actions/retry",
        "/actions/discard",
        "/actions/cancel",
        "/actions/bogus",
        "/actions/queues/default/pause",
        "/actions/queues/default/limits",
        "/actions/queues/x%00y/limits",
        "/actions/queues/default/bogus",
    ]
)


@FUZZ
@given(action=actions, form=forms)
def test_a_refused_action_changes_nothing(target, client: Client, action: str, form: dict) -> None:
    app = create_app(
        DashboardSettings(
            dsn=target.dsn,
            schema=target.schema,
            allowed_hosts=("testserver",),
            allow_actions=True,
            token=TOKEN,
        )
    )
    auth = {"Authorization": f"Bearer {TOKEN}", "Origin": "http://testserver"}
    with TestClient(app, raise_server_exceptions=False, follow_redirects=False) as web:
        page = web.get("/queues", headers=auth).text
        token = page.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        before = snapshot(client)
        body = "&".join(  # as a browser encodes a form: bytes that are not UTF-8 included
            f"{k}={quote_from_bytes(v.encode('utf-8', 'surrogateescape'), safe='')}"
            for k, v in {**form, "csrf": token}.items()
        )
        response = web.post(
            action,
            content=body,
            headers={**auth, "Content-Type": "application/x-www-form-urlencoded"},
        )
    assert response.status_code < 500, (action, form, response.text[:300])
    if response.status_code >= 400:
        assert snapshot(client) == before, (action, form, response.text[:300])
