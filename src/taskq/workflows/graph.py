"""Building a workflow: ``Workflow``, ``step``, ``chain``, ``group``. No I/O.

A ``Workflow`` is a definition: steps (an actor and its arguments each) and which steps
each one runs after. ``client.enqueue_workflow(wf)`` makes one run of it (a new id, new
step ids) every time it is called. Everything that can be wrong with a definition is
refused before anything is written, as one ``InvalidWorkflow`` (or ``ArgumentsMismatch``
for arguments that do not fit an actor's function, at ``add``):

* an ``after`` that is not a step of this workflow (another workflow's step, a name no
  step has by the time the workflow is enqueued, anything else);
* a cycle (possible only through ``after`` names, which may name steps added later);
* a step name given twice; an ``on_failure`` other than ``"cancel"`` or ``"run"``;
* more than ``MAX_STEPS`` steps or ``MAX_EDGES`` ``after`` references.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, ParamSpec, overload

from ..arguments import check_arguments
from ..exceptions import InvalidWorkflow
from ..jobs import OnFailure
from ..registry import Actor, ActorRef
from .model import MAX_EDGES, MAX_STEP_NAME, MAX_STEPS

P = ParamSpec("P")
OnFailureArg = Literal["cancel", "run"]


@dataclass(frozen=True, slots=True)
class Step:
    """An actor and its arguments, not yet in a workflow (``taskq.step``)."""

    actor: ActorRef
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]

    @property
    def actor_name(self) -> str:
        return self.actor.name if isinstance(self.actor, Actor) else self.actor


@overload
def step(actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> Step: ...
@overload
def step(actor: str, /, *args: Any, **kwargs: Any) -> Step: ...
def step(actor: ActorRef, /, *args: Any, **kwargs: Any) -> Step:
    """A step outside a workflow: ``wf.add(taskq.step(resize, "a.png", width=64),
    after=[a])``, ``taskq.chain(...)``, ``taskq.group(...)``. Given an ``Actor``, a type
    checker checks the arguments against its function, and so does this call."""
    if isinstance(actor, Actor):
        check_arguments(actor, args, kwargs)
    elif not isinstance(actor, str) or not actor:
        raise InvalidWorkflow(f"a step's actor must be a taskq Actor or a name, got {actor!r}")
    return Step(actor, args, dict(kwargs))


@dataclass(frozen=True, eq=False, slots=True)
class StepRef:
    """A step of a workflow, as ``Workflow.add`` returns it: give it to ``after=``."""

    workflow: Workflow
    index: int  # its place in the workflow (the order of add)
    name: str
    step: Step
    after: tuple[StepRef | str, ...]  # steps, or names of steps (resolved at enqueue)
    on_failure: OnFailure

    def __repr__(self) -> str:
        return f"StepRef({self.name!r} of workflow {self.workflow.name!r})"


class Workflow:
    """Steps that run after other steps. ``wf = taskq.Workflow("archive-account")``,
    ``a = wf.add(fetch, url)``, ``wf.add(report, after=[a])``, then
    ``client.enqueue_workflow(wf)``. The name is for people; each enqueue gets its own id.
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_STEP_NAME:
            raise InvalidWorkflow(
                f"a workflow's name must be a non-empty string of at most {MAX_STEP_NAME} "
                f"characters, got {name!r}"
            )
        self.name = name
        self._steps: list[StepRef] = []
        self._names: dict[str, StepRef] = {}
        self._suffixes: dict[str, int] = {}  # the last -N a default name took, by base
        self._edges = 0

    @property
    def steps(self) -> Sequence[StepRef]:
        """The steps, in the order they were added."""
        return tuple(self._steps)

    def __len__(self) -> int:
        return len(self._steps)

    def __repr__(self) -> str:
        return f"Workflow({self.name!r}, {len(self._steps)} steps)"

    @overload
    def add(
        self,
        step: Step,
        /,
        *,
        after: Iterable[StepRef | str] = (),
        name: str | None = None,
        on_failure: OnFailureArg = "cancel",
    ) -> StepRef: ...
    @overload
    def add(self, actor: Actor[P, Any], /, *args: P.args, **kwargs: P.kwargs) -> StepRef: ...
    @overload
    def add(
        self,
        actor: ActorRef,
        /,
        *args: Any,
        after: Iterable[StepRef | str],
        name: str | None = None,
        on_failure: OnFailureArg = "cancel",
        **kwargs: Any,
    ) -> StepRef: ...
    @overload
    def add(
        self,
        actor: ActorRef,
        /,
        *args: Any,
        name: str,
        on_failure: OnFailureArg = "cancel",
        **kwargs: Any,
    ) -> StepRef: ...
    @overload
    def add(
        self, actor: ActorRef, /, *args: Any, on_failure: OnFailureArg, **kwargs: Any
    ) -> StepRef: ...
    @overload
    def add(self, actor: str, /, *args: Any, **kwargs: Any) -> StepRef: ...
    def add(self, actor: Step | ActorRef, /, *args: Any, **kwargs: Any) -> StepRef:
        """Add a step: ``actor`` with its arguments, or a ``taskq.step(...)`` (the form to
        use when the actor's own keyword arguments are called ``after``, ``name`` or
        ``on_failure``). It runs once every step in ``after`` succeeded (steps this
        workflow's ``add`` returned, or their names); with ``on_failure="run"`` once
        every one of them ended, whatever their end (a cleanup step). ``name`` names it
        (default: the actor's name, made unique with ``-2``, ``-3``, ...); its result is
        known by that name to the steps after it (``current_job().upstream``).

        The arguments are checked against the actor's function now (``Actor`` objects);
        a mistake raises here, and the workflow is left as it was."""
        after = kwargs.pop("after", ())
        name = kwargs.pop("name", None)
        on_failure = kwargs.pop("on_failure", "cancel")
        if isinstance(actor, Step):
            if args or kwargs:
                raise InvalidWorkflow(
                    "add(taskq.step(...)) takes the step's arguments inside taskq.step(...), "
                    "not after it"
                )
            made = actor
        else:
            made = step(actor, *args, **kwargs)
        return self._add(made, after, name, on_failure)

    def _add(
        self,
        made: Step,
        after: Iterable[StepRef | str],
        name: str | None,
        on_failure: str,
    ) -> StepRef:
        if len(self._steps) >= MAX_STEPS:
            raise InvalidWorkflow(
                f"workflow {self.name!r} would have more than {MAX_STEPS} steps (the limit "
                "a workflow)"
            )
        if on_failure not in (OnFailure.CANCEL, OnFailure.RUN):
            raise InvalidWorkflow(f"on_failure must be 'cancel' or 'run', got {on_failure!r}")
        upstream = self._upstream(after)
        if self._edges + len(upstream) > MAX_EDGES:
            raise InvalidWorkflow(
                f"workflow {self.name!r} would have more than {MAX_EDGES} `after` references "
                "(the limit a workflow)"
            )
        final = self._name_for(made, name)
        ref = StepRef(self, len(self._steps), final, made, upstream, OnFailure(on_failure))
        self._steps.append(ref)
        self._names[final] = ref
        self._edges += len(upstream)
        return ref

    def _upstream(self, after: Iterable[StepRef | str]) -> tuple[StepRef | str, ...]:
        if isinstance(after, StepRef | str):
            after = [after]
        out: dict[StepRef | str, None] = {}  # in order, each once (StepRef: by identity)
        for item in after:
            if isinstance(item, StepRef):
                if item.workflow is not self:
                    raise InvalidWorkflow(
                        f"after= names step {item.name!r} of another workflow "
                        f"({item.workflow.name!r}); a step can only run after steps of its "
                        f"own workflow ({self.name!r})"
                    )
            elif not isinstance(item, str):
                raise InvalidWorkflow(
                    f"after= takes steps this workflow's add() returned, or their names; "
                    f"got {item!r}"
                )
            out[item] = None
        return tuple(out)

    def _name_for(self, made: Step, name: str | None) -> str:
        if name is not None:
            if not isinstance(name, str) or not name or len(name) > MAX_STEP_NAME:
                raise InvalidWorkflow(
                    f"a step's name must be a non-empty string of at most {MAX_STEP_NAME} "
                    f"characters, got {name!r}"
                )
            if name in self._names:
                raise InvalidWorkflow(f"workflow {self.name!r} already has a step named {name!r}")
            return name
        base = self._default_name(made)
        candidate, n = base, self._suffixes.get(base, 1)
        while candidate in self._names:
            n += 1
            candidate = f"{base}-{n}"
        self._suffixes[base] = n
        return candidate

    def _default_name(self, made: Step) -> str:
        return made.actor_name

    def resolved(self) -> list[list[int]]:
        """Each step's upstream steps as indexes, names resolved; refuses unknown names
        and cycles (``InvalidWorkflow``)."""
        if not self._steps:
            raise InvalidWorkflow(f"workflow {self.name!r} has no steps")
        upstream: list[list[int]] = []
        for ref in self._steps:
            ups: dict[int, None] = {}  # in order, each once
            for item in ref.after:
                target = self._names.get(item) if isinstance(item, str) else item
                if target is None:
                    raise InvalidWorkflow(
                        f"step {ref.name!r} of workflow {self.name!r} runs after {item!r}, "
                        "which is no step of it"
                    )
                if target.index == ref.index:
                    raise InvalidWorkflow(f"step {ref.name!r} runs after itself (a cycle)")
                ups[target.index] = None
            upstream.append(list(ups))
        _refuse_cycles(self, upstream)
        return upstream


def _refuse_cycles(wf: Workflow, upstream: list[list[int]]) -> None:
    """Kahn's algorithm: a step left unordered is on a cycle."""
    waiting = [len(u) for u in upstream]
    downstream: list[list[int]] = [[] for _ in upstream]
    for i, ups in enumerate(upstream):
        for u in ups:
            downstream[u].append(i)
    ready = [i for i, n in enumerate(waiting) if n == 0]
    seen = 0
    while ready:
        i = ready.pop()
        seen += 1
        for d in downstream[i]:
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)
    if seen < len(upstream):
        stuck = [wf.steps[i].name for i, n in enumerate(waiting) if n > 0]
        raise InvalidWorkflow(
            f"workflow {wf.name!r} has a cycle: steps {', '.join(map(repr, stuck[:5]))}"
            f"{' ...' if len(stuck) > 5 else ''} wait for each other"
        )


def chain(*steps: Step, name: str = "chain") -> Workflow:
    """A workflow of ``steps`` one after the other: each runs after the one before."""
    wf = Workflow(name)
    previous: StepRef | None = None
    for s in _steps_of(steps, "chain"):
        previous = wf.add(s, after=[previous] if previous else [])
    return wf


def group(*steps: Step, then: Step | None = None, name: str = "group") -> Workflow:
    """A workflow of ``steps`` that run side by side; ``then`` runs once, after all of
    them succeeded (the fan-in; Celery calls the pair a chord)."""
    wf = Workflow(name)
    refs = [wf.add(s) for s in _steps_of(steps, "group")]
    if then is not None:
        wf.add(_steps_of([then], "group's then")[0], after=refs)
    return wf


def _steps_of(steps: Iterable[Any], what: str) -> list[Step]:
    out = list(steps)
    if not out:
        raise InvalidWorkflow(f"{what} needs at least one step")
    for s in out:
        if not isinstance(s, Step):
            raise InvalidWorkflow(
                f"{what} takes steps made with taskq.step(actor, *args, **kwargs), got {s!r}"
            )
    return out
