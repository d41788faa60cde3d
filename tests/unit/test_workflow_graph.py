"""Building workflows: every mistake refused before anything is written, in one line."""

from __future__ import annotations

import pytest

import taskq
from taskq.exceptions import ArgumentsMismatch, InvalidWorkflow
from taskq.workflows.model import MAX_STEPS

registry = taskq.Registry()


@registry.actor
def fetch(url: str) -> str:
    return url


@registry.actor
def resize(width: int, *, after: str = "", name: str = "") -> int:
    return width


@registry.actor
def report() -> None:
    return None


def test_steps_and_their_after_resolve_in_the_order_added() -> None:
    wf = taskq.Workflow("archive")
    a = wf.add(fetch, "https://x")
    b = wf.add(resize, 64, after=[a])
    c = wf.add(resize, 32, after=a)
    d = wf.add(report, after=[b, c, b])
    assert [s.name for s in wf.steps] == ["fetch", "resize", "resize-2", "report"]
    assert wf.resolved() == [[], [0], [0], [1, 2]]
    assert d.after == (b, c)
    assert len(wf) == 4 and "4 steps" in repr(wf)


def test_an_actors_own_after_or_name_keywords_go_through_taskq_step() -> None:
    wf = taskq.Workflow("w")
    a = wf.add(fetch, "u")
    s = wf.add(taskq.step(resize, 1, after="its own", name="its own"), after=[a], name="r")
    assert s.step.kwargs == {"after": "its own", "name": "its own"}
    assert s.name == "r" and s.after == (a,)
    with pytest.raises(InvalidWorkflow, match=r"inside taskq\.step"):
        wf.add(taskq.step(report), 1)


def test_arguments_that_do_not_fit_are_refused_at_add_and_nothing_is_added() -> None:
    wf = taskq.Workflow("w")
    with pytest.raises(ArgumentsMismatch, match="'resize'"):
        wf.add(resize, "a", "b")
    with pytest.raises(ArgumentsMismatch):
        wf.add(fetch, url="u", width=3)
    with pytest.raises(ArgumentsMismatch):
        taskq.step(report, 1)
    assert len(wf) == 0
    wf.add("any.name", 1, 2, three=3)  # an actor by name is not checked
    assert len(wf) == 1


def test_after_must_name_steps_of_this_workflow() -> None:
    one, two = taskq.Workflow("one"), taskq.Workflow("two")
    a = one.add(fetch, "u")
    with pytest.raises(InvalidWorkflow, match="another workflow \\('one'\\)"):
        two.add(report, after=[a])
    with pytest.raises(InvalidWorkflow, match="after= takes steps"):
        two.add(report, after=[42])  # type: ignore[list-item]
    assert len(two) == 0


def test_unknown_after_names_and_cycles_are_refused_when_resolved() -> None:
    wf = taskq.Workflow("w")
    wf.add(fetch, "u", after=["nope"])
    with pytest.raises(InvalidWorkflow, match="runs after 'nope', which is no step of it"):
        wf.resolved()
    loop = taskq.Workflow("loop")
    loop.add(fetch, "u", name="a", after=["c"])
    loop.add(fetch, "u", name="b", after=["a"])
    loop.add(fetch, "u", name="c", after=["b"])
    loop.add(report, name="free")
    with pytest.raises(InvalidWorkflow, match="has a cycle: steps 'a', 'b', 'c' wait"):
        loop.resolved()
    selfish = taskq.Workflow("self")
    selfish.add(report, name="me", after=["me"])
    with pytest.raises(InvalidWorkflow, match="runs after itself"):
        selfish.resolved()
    with pytest.raises(InvalidWorkflow, match="has no steps"):
        taskq.Workflow("empty").resolved()


def test_names_on_failure_and_the_size_limit() -> None:
    wf = taskq.Workflow("w")
    wf.add(report, name="x")
    with pytest.raises(InvalidWorkflow, match="already has a step named 'x'"):
        wf.add(report, name="x")
    with pytest.raises(InvalidWorkflow, match="on_failure must be 'cancel' or 'run'"):
        wf.add(report, on_failure="sometimes")  # type: ignore[call-overload]
    with pytest.raises(InvalidWorkflow, match="name"):
        taskq.Workflow("")
    big = taskq.Workflow("big")
    for _ in range(MAX_STEPS):
        big.add("tests.echo")
    with pytest.raises(InvalidWorkflow, match=f"more than {MAX_STEPS} steps"):
        big.add("tests.echo")


def test_chain_and_group_are_workflows() -> None:
    c = taskq.chain(taskq.step(fetch, "u"), taskq.step(resize, 1), taskq.step(report))
    assert c.resolved() == [[], [0], [1]] and c.name == "chain"
    g = taskq.group(taskq.step(fetch, "u"), taskq.step(fetch, "v"), then=taskq.step(report))
    assert g.resolved() == [[], [], [0, 1]]
    assert [s.name for s in g.steps] == ["fetch", "fetch-2", "report"]
    with pytest.raises(InvalidWorkflow, match=r"taskq\.step"):
        taskq.group(fetch)  # type: ignore[arg-type]
    with pytest.raises(InvalidWorkflow, match="at least one step"):
        taskq.chain()
