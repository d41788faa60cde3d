"""The dashboard over HTTP (Starlette's test client) on both real stores: every page
with real jobs run by the worker's executor, the safety rules (auth, CSRF, read-only,
redaction), and the actions."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx2")

from starlette.testclient import TestClient

from taskq.client import Client
from taskq.exceptions import JobNotFound
from taskq.ids import uuid7
from taskq.testing import drain
from taskq.web import DashboardSettings, create_app
from tests.support import dashboard_actors as actors
from tests.support.dashboard_support import basic

TOKEN = "s3cret-token-for-tests-0123456789"


@pytest.fixture
def jobs(client: Client) -> dict[str, object]:
    """Real jobs run by the worker's executor: one succeeded, one dead with a cause
    (two failed attempts), one with sensitive arguments, one queued."""
    ok = client.enqueue(actors.add, 2, 3)
    dead = client.enqueue(actors.load_report, "/tmp/r.csv")
    secret = client.enqueue_with(
        actors.charge, ["4111-1111"], {"amount": 5, "api_token": "tok-123"}
    )
    hidden = client.enqueue_with(actors.add, [1, 1], meta={"sensitive": True})
    drain(client, registry=actors.registry)
    queued = client.enqueue_with(actors.add, [7, 8], queue="later", delay=3600)
    return {"ok": ok, "dead": dead, "secret": secret, "hidden": hidden, "queued": queued}


#: what a browser on the dashboard's own page sends with a form
SAME_ORIGIN = {"Origin": "http://testserver"}


def app_for(target, **settings) -> TestClient:
    settings.setdefault("allowed_hosts", ("testserver",))
    return TestClient(
        create_app(DashboardSettings(dsn=target.dsn, schema=target.schema, **settings)),
        follow_redirects=False,
        headers=SAME_ORIGIN,
    )


def csrf_of(page: str) -> str:
    match = re.search(r'name="csrf" value="([^"]+)"', page)
    assert match, "no CSRF field in the page"
    return match.group(1)


def test_every_page_renders_real_jobs_read_only(target, jobs) -> None:
    with app_for(target) as web:
        overview = web.get("/")
        assert overview.status_code == 200
        assert 'data-queue="reports"' in overview.text and 'data-queue="default"' in overview.text
        assert "read-only" in overview.text
        assert re.search(r'data-col="failure-rate">100.0%', overview.text)  # reports

        listed = web.get("/jobs").text
        for key in ("ok", "dead", "queued"):
            assert str(jobs[key]) in listed
        dead_only = web.get("/jobs", params={"state": "dead"}).text
        assert str(jobs["dead"]) in dead_only and str(jobs["ok"]) not in dead_only
        by_error = web.get("/jobs", params={"error": "CANNOT LOAD"}).text
        assert str(jobs["dead"]) in by_error and str(jobs["ok"]) not in by_error
        by_actor = web.get("/jobs", params={"actor": actors.add.name}).text
        assert str(jobs["ok"]) in by_actor and str(jobs["dead"]) not in by_actor

        page = web.get(f"/jobs/{jobs['dead']}").text
        assert page.count('class="err-exc"') == 2  # both attempts, each with its cause
        assert "ValueError: cannot load /tmp/r.csv" in page
        assert "Caused by: KeyError: &#39;missing&#39;" in page
        assert "hunter2" not in page and "postgresql://app:***@db/prod" in page
        assert "Retry" not in page  # read-only: no action buttons
        assert 'name="csrf" value=""' not in page

        assert "5" in web.get(f"/jobs/{jobs['ok']}").text
        dead_page = web.get("/dead").text
        assert str(jobs["dead"]) in dead_page and "--allow-actions" in dead_page
        assert web.get("/workers").status_code == 200
        queues = web.get("/queues").text
        assert 'data-queue="later"' in queues
        assert web.get("/static/htmx.min.js").status_code == 200
        assert web.get("/jobs/not-a-uuid").status_code == 404


def test_sensitive_arguments_are_never_rendered(target, jobs) -> None:
    with app_for(target) as web:
        secret = web.get(f"/jobs/{jobs['secret']}").text
        assert "tok-123" not in secret and "4111-1111" in secret  # by name: api_token
        hidden = web.get(f"/jobs/{jobs['hidden']}").text
        assert "arguments are hidden" in hidden
        assert re.search(r"args = &#34;•+&#34;", hidden)


def test_keyset_pages_walk_every_job_once(target, client) -> None:
    ids = [str(i) for i in client.enqueue_many(actors.add, [((i, i), {}) for i in range(120)])]
    seen: list[str] = []
    url = "/jobs"
    with app_for(target) as web:
        while url:
            text = web.get(url).text
            seen += re.findall(r'data-job="([0-9a-f-]+)"', text)
            nxt = re.search(r'id="next-page" href="([^"]+)"', text)
            url = nxt.group(1).replace("&amp;", "&") if nxt else ""
    assert seen == list(reversed(ids))


def test_actions_are_refused_without_credentials_or_when_disabled(target, jobs) -> None:
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        assert web.get("/").status_code == 401  # every page needs the token
        assert "Basic" in web.get("/").headers["www-authenticate"]
        refused = web.post("/actions/retry", data={"id": str(jobs["dead"])})
        assert refused.status_code == 401
        wrong = web.post(
            "/actions/retry", data={"id": str(jobs["dead"])}, headers=basic("ops", "nope")
        )
        assert wrong.status_code == 401
    with app_for(target, token=TOKEN) as web:  # a token, but actions off
        page = web.get("/dead", headers={"Authorization": f"Bearer {TOKEN}"})
        assert page.status_code == 200
        off = web.post(
            "/actions/retry",
            data={"id": str(jobs["dead"])},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert off.status_code == 403
    with Client(target.dsn, schema=target.schema) as c:
        assert c.get(jobs["dead"]).state == "dead"  # nothing moved


def test_a_wrong_or_missing_csrf_token_is_refused(target, jobs) -> None:
    auth = basic("alice", TOKEN)
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        web.get("/dead", headers=auth)  # sets the CSRF cookie
        for data in (
            {"id": str(jobs["dead"])},
            {"id": str(jobs["dead"]), "csrf": "x" * 43},
        ):
            refused = web.post("/actions/retry", data=data, headers=auth)
            assert refused.status_code == 403 and "CSRF" in refused.text
        page = web.get("/dead", headers=auth).text
        cross = web.post(
            "/actions/retry",
            data={"id": str(jobs["dead"]), "csrf": csrf_of(page)},
            headers={**auth, "Origin": "https://evil.example"},
        )
        assert cross.status_code == 403
    with Client(target.dsn, schema=target.schema) as c:
        assert c.get(jobs["dead"]).state == "dead"


def test_retry_discard_cancel_and_queue_pause_with_credentials(
    target, jobs, client, caplog
) -> None:
    auth = basic("alice", TOKEN)
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        token = csrf_of(web.get("/dead", headers=auth).text)
        done = web.post(
            "/actions/retry",
            data={"id": str(jobs["dead"]), "csrf": token, "next": "/dead"},
            headers=auth,
        )
        assert done.status_code == 303 and done.headers["location"].startswith("/dead?done=1+")
        assert client.get(jobs["dead"]).state == "queued"
        cancelled = web.post(
            "/actions/cancel", data={"id": str(jobs["queued"]), "csrf": token}, headers=auth
        )
        assert cancelled.status_code == 303
        assert client.get(jobs["queued"]).state == "cancelled"
        gone = web.post(
            "/actions/discard", data={"id": str(jobs["queued"]), "csrf": token}, headers=auth
        )
        assert gone.status_code == 303
        with pytest.raises(JobNotFound):
            client.get(jobs["queued"])
        paused = web.post("/actions/queues/reports/pause", data={"csrf": token}, headers=auth)
        assert paused.status_code == 303
        assert [q.paused for q in client.queues() if q.name == "reports"] == [True]
        assert "alice" in (next(q for q in client.queues() if q.name == "reports").paused_by or "")
        web.post("/actions/queues/reports/resume", data={"csrf": token}, headers=auth)
        assert [q.paused for q in client.queues() if q.name == "reports"] == [False]
        limited = web.post(
            "/actions/queues/reports/limits",
            data={"csrf": token, "concurrency": "3", "rate": "10/minute"},
            headers=auth,
        )
        assert limited.status_code == 303
        bad = web.post(
            "/actions/queues/reports/limits",
            data={"csrf": token, "rate": "lots"},
            headers=auth,
        )
        assert bad.status_code == 400


async def test_cancel_reaches_a_running_job(target, store, client) -> None:
    """The Cancel button on a running job asks its worker to stop it (as taskq jobs
    cancel does), recording who; it is not limited to queued jobs."""
    job_id = client.enqueue_with(actors.add, [1, 2], queue="running-q")
    (claimed,) = await store.claim(uuid7(), ["running-q"], 1, 30.0)
    assert claimed.id == job_id
    auth = basic("alice", TOKEN)
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        token = csrf_of(web.get(f"/jobs/{job_id}", headers=auth).text)
        done = web.post("/actions/cancel", data={"id": str(job_id), "csrf": token}, headers=auth)
        assert done.status_code == 303
    job = client.get(job_id)
    assert job.state == "running" and job.cancel_requested
    assert "alice" in (job.cancelled_by or "")


def test_cli_refuses_actions_without_a_token_and_an_unmigrated_store(target, tmp_path) -> None:
    from tests.support.workgroup_harness import run_cli

    env = {**target.env}
    env.pop("TASKQ_DASHBOARD_TOKEN", None)
    no_token = run_cli("dashboard", "--allow-actions", env=env)
    assert no_token.returncode == 1
    assert no_token.stderr.strip().splitlines() == [
        "taskq: --allow-actions needs TASKQ_DASHBOARD_TOKEN: actions are never anonymous"
    ]
    fresh = {**env, "TASKQ_DSN": f"sqlite:///{tmp_path / 'empty.sqlite3'}"}
    unmigrated = run_cli("dashboard", "--port", "0", env=fresh)
    assert unmigrated.returncode == 1 and "Traceback" not in unmigrated.stderr
    assert unmigrated.stderr.startswith("taskq: ") and "migrate" in unmigrated.stderr


def test_every_action_form_carries_the_csrf_token(target, jobs) -> None:
    """One token per session and caller, minted by the server: every form of every page
    carries the same one, and it is not the session cookie."""
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        first = web.get("/", headers=auth)
        session = first.cookies.get("taskq_session") or web.cookies.get("taskq_session")
        assert session and len(session) >= 43
        tokens = set()
        for path in ("/dead", f"/jobs/{jobs['dead']}", f"/jobs/{jobs['queued']}", "/queues"):
            text = web.get(path, headers=auth).text
            fields = re.findall(r'name="csrf" value="([^"]*)"', text)
            assert fields, path
            tokens |= set(fields)
        assert len(tokens) == 1 and session not in tokens and all(len(t) >= 43 for t in tokens)


def test_workers_page_shows_workgroup_children_as_their_supervisor_reported(target, jobs) -> None:
    import asyncio

    from taskq.ids import uuid7
    from taskq.store import create_store

    instance = uuid7()
    children = [
        {
            "name": "api",
            "pid": 4242,
            "state": "running",
            "restarts": 3,
            "latched": False,
            "last_exit_cause": "killed by SIGKILL",
            "last_restart_reason": "child_exit",
            "queues": ["default"],
            "uptime_seconds": 12.5,
        },
        {
            "name": "batch",
            "pid": None,
            "state": "latched",
            "restarts": 10,
            "latched": True,
            "last_exit_cause": "exited with code 3",
            "last_restart_reason": "child_exit",
            "queues": ["reports"],
            "uptime_seconds": None,
        },
    ]

    async def report() -> None:
        store = create_store(target.dsn, target.schema)
        await store.open()
        try:
            await store.report_workgroup(instance, "host-7", 99, children)
        finally:
            await store.close()

    asyncio.run(report())
    with app_for(target) as web:
        page = web.get("/workers").text
    assert f'data-workgroup="{instance}"' in page and "host-7" in page
    api = page.split('data-child="api"', 1)[1].split("</tr>", 1)[0]
    assert "4242" in api and ">3<" in api and "killed by SIGKILL" in api
    batch = page.split('data-child="batch"', 1)[1].split("</tr>", 1)[0]
    assert "latched" in batch and "exited with code 3" in batch


def test_bulk_retry_and_discard_of_dead_letters(target, client) -> None:
    dead = [client.enqueue(actors.load_report, f"/r{i}.csv") for i in range(4)]
    other = client.enqueue_with(actors.load_report, ["/p.csv"], queue="pay")
    drain(client, registry=actors.registry)  # all five dead (2 attempts each)
    assert {client.get(j).state for j in [*dead, other]} == {"dead"}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with app_for(target, allow_actions=True, token=TOKEN) as web:
        token = csrf_of(web.get("/dead", headers=auth).text)
        selected = web.post(
            "/actions/discard",
            data={"id": [str(dead[0]), str(dead[1])], "csrf": token},
            headers=auth,
        )
        assert selected.status_code == 303 and "2+job" in selected.headers["location"]
        in_queue = web.post(
            "/actions/discard",
            data={"all": "dead", "queue": "reports", "csrf": token},
            headers=auth,
        )
        assert "2+job" in in_queue.headers["location"]
        assert [j.id for j in client.list(state="dead")] == [other]
        everything = web.post("/actions/retry", data={"all": "dead", "csrf": token}, headers=auth)
        assert everything.status_code == 303
    assert client.stats()["dead"] == 0
    assert client.get(other).state == "queued"  # the only dead job left, re-queued
    for job_id in dead:
        with pytest.raises(JobNotFound):
            client.get(job_id)
