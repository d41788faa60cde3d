"""``taskq workflows`` as a user meets it: real subprocesses against both stores."""

from __future__ import annotations

import json
import uuid

import taskq
import taskq.testing
from tests.acceptance.test_cli import assert_one_line_error
from tests.acceptance.test_cli import taskq as run
from tests.support import workflow_actors as wa

WORKFLOW_KEYS = {
    "id",
    "name",
    "state",
    "step_count",
    "steps_left",
    "failed_steps",
    "cancelled_steps",
    "created_at",
    "finished_at",
    "cancelled_at",
    "cancelled_by",
}
STEP_KEYS = {"id", "name", "actor", "queue", "state", "after", "on_failure", "attempts"}


def _workflows(target) -> tuple[uuid.UUID, uuid.UUID]:
    """A finished workflow (one step died) and a running one."""
    done = taskq.group(
        taskq.step(wa.work, "a"),
        taskq.step(wa.work, "b", fail=True),
        then=taskq.step(wa.echo_upstream),
        name="nightly",
    )
    with taskq.Client(target.dsn, schema=target.schema) as client:
        client.open()
        client.run(client.async_client.store.migrate())
        first = client.enqueue_workflow(done)
        taskq.testing.drain(client, registry=wa.registry)
        second = client.enqueue_workflow(taskq.chain(taskq.step(wa.work, "x"), name="pending"))
    return first, second


def test_workflows_lists_recent_runs_with_their_state(target) -> None:
    first, second = _workflows(target)
    listed = json.loads(run(target, "workflows", "--json").stdout)
    assert [w["id"] for w in listed] == [str(second), str(first)]
    assert set(listed[1]) == WORKFLOW_KEYS
    assert (listed[1]["state"], listed[1]["step_count"], listed[1]["failed_steps"]) == (
        "failed",
        3,
        1,
    )
    assert listed[0]["state"] == "running"
    only = json.loads(run(target, "workflows", "--state", "failed", "--json").stdout)
    assert [w["id"] for w in only] == [str(first)]
    table = run(target, "workflows").stdout.splitlines()
    assert table[0].split()[:3] == ["id", "name", "state"]
    assert str(first) in table[2] and "nightly" in table[2] and "failed" in table[2]


def test_workflows_show_gives_every_step_its_state_and_after(target) -> None:
    first, _ = _workflows(target)
    shown = json.loads(run(target, "workflows", "show", str(first), "--json").stdout)
    assert set(shown) == WORKFLOW_KEYS | {"steps"}
    steps = {s["name"]: s for s in shown["steps"]}
    assert STEP_KEYS <= set(steps["work"])
    assert [(s["name"], s["state"], s["after"]) for s in shown["steps"]] == [
        ("work", "succeeded", []),
        ("work-2", "dead", []),
        ("echo_upstream", "cancelled", ["work", "work-2"]),
    ]
    assert steps["echo_upstream"]["cancelled_by"] == "upstream_failed"
    text = run(target, "workflows", "show", str(first)).stdout
    assert "state failed: 3 steps, 0 not ended, 1 dead, 1 cancelled" in text
    assert "cancelled by upstream_failed" in text and "work, work-2" in text


def test_workflows_cancel_and_its_mistakes(target) -> None:
    _, second = _workflows(target)
    out = run(target, "workflows", "cancel", str(second)).stdout
    assert f"cancelled workflow {second}: 1 step(s)" in out
    shown = json.loads(run(target, "workflows", "show", str(second), "--json").stdout)
    assert shown["state"] == "cancelled" and shown["cancelled_by"].startswith("cli:")
    assert_one_line_error(
        run(target, "workflows", "show", "nope", check=False), "invalid workflow id 'nope'"
    )
    missing = str(uuid.UUID(int=1))
    assert_one_line_error(
        run(target, "workflows", "show", missing, check=False), f"no workflow with id {missing}"
    )
    assert_one_line_error(
        run(target, "workflows", "cancel", missing, check=False), f"no workflow with id {missing}"
    )
    bad = run(target, "workflows", "--state", "bogus", check=False)
    assert bad.returncode != 0 and "invalid choice" in bad.stderr
