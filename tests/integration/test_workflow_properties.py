"""Property: over random DAGs of steps (some that fail, some on_failure="run", some not
idempotent), on both stores, every step runs only after all of its ``after`` steps
succeeded (a cleanup step: ended), never after an upstream failure otherwise, a
non-idempotent step at most once; and the stored end of every step and of the workflow
is what those rules give.

The steps run through the worker's executor (``taskq.testing.drain``), which records
every run (tests.support.workflow_actors) in the order it happened.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import taskq
import taskq.testing
from tests.support import workflow_actors as wa


@dataclass(frozen=True)
class Node:
    after: tuple[int, ...]
    fail: bool
    cleanup: bool  # on_failure="run"
    idempotent: bool


@st.composite
def dags(draw: st.DrawFn) -> list[Node]:
    n = draw(st.integers(1, 12))
    nodes = []
    for i in range(n):
        after = draw(st.sets(st.integers(0, i - 1), max_size=3)) if i else set()
        nodes.append(
            Node(
                tuple(sorted(after)),
                draw(st.integers(0, 3)) == 0,
                draw(st.integers(0, 4)) == 0,
                draw(st.booleans()),
            )
        )
    return nodes


def expected(nodes: list[Node]) -> list[str]:
    """Each step's end by the rules: a step runs when every upstream step succeeded (a
    cleanup step: when every one ended, which they all do); it then succeeds unless it
    fails; a step that does not run is cancelled."""
    ends: list[str] = []
    for node in nodes:
        runs = node.cleanup or all(ends[u] == "succeeded" for u in node.after)
        ends.append(("dead" if node.fail else "succeeded") if runs else "cancelled")
    return ends


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(nodes=dags())
def test_random_dags_keep_the_order_and_the_failure_rules(
    nodes: list[Node], target, store, tmp_path: Path
) -> None:
    record = tmp_path / "record.log"
    record.unlink(missing_ok=True)
    os.environ["TASKQ_WF_RECORD"] = str(record)
    try:
        wf = taskq.Workflow("random")
        for i, node in enumerate(nodes):
            wf.add(
                taskq.step(wa.redo if node.idempotent else wa.work, f"s{i}", fail=node.fail),
                after=[f"s{u}" for u in node.after],
                name=f"s{i}",
                on_failure="run" if node.cleanup else "cancel",
            )
        with taskq.Client(target.dsn, schema=target.schema) as client:
            wf_id = client.enqueue_workflow(wf)
            taskq.testing.drain(client, registry=wa.registry)
            info = client.workflow(wf_id)
    finally:
        del os.environ["TASKQ_WF_RECORD"]

    lines = [r for r in wa.runs(record) if r["workflow"] == str(wf_id)]
    started: dict[str, int] = {}  # step -> index of its first start line
    ended: dict[str, int] = {}  # step -> index of its end or fail line
    for index, line in enumerate(lines):
        if line["event"] == "start":
            assert line["step"] not in started or nodes[int(line["step"][1:])].idempotent, (
                f"non-idempotent step {line['step']} started twice"
            )
            started.setdefault(line["step"], index)
        else:
            ended[line["step"]] = index
    for i, node in enumerate(nodes):
        name = f"s{i}"
        if name not in started:
            continue
        for u in node.after:
            up = lines[ended[f"s{u}"]] if f"s{u}" in ended else None
            if node.cleanup:  # every upstream step ended first (ran and ended, or never ran)
                assert f"s{u}" not in started or ended[f"s{u}"] < started[name]
            else:  # every upstream step succeeded first
                assert up is not None and up["event"] == "end", f"{name} ran after s{u} failed"
                assert ended[f"s{u}"] < started[name], f"{name} started before s{u} ended"

    ends = expected(nodes)
    assert [s.state for s in info.steps] == ends
    assert set(started) == {f"s{i}" for i, e in enumerate(ends) if e != "cancelled"}
    assert info.state == ("failed" if "dead" in ends else "succeeded")
    assert (info.steps_left, info.failed_steps) == (0, ends.count("dead"))
