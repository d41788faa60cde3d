"""Test helpers for application code: assert what was enqueued, run queued jobs inline.

```python
from taskq.testing import assert_enqueued, drain

def test_signup(taskq_client):                 # the pytest fixture (taskq.testing.plugin)
    signup("ada@example.com")                  # your code enqueues with its own client
    assert_enqueued(send_welcome, args=["ada@example.com"], queue="mail")
    runs = drain(taskq_client)                 # runs them here, with the real rules
    assert [r.state for r in runs] == ["succeeded"]
```

``drain``/``assert_enqueued`` take their client (and ``drain`` the registry whose actors
it runs) from ``use(client, registry)``, which the ``taskq_client`` fixture enters for
each test; pass ``client=``/``registry=`` to use others. ``drain_async`` and
``assert_enqueued_async`` are the same for an ``AsyncClient``. See docs/testing-your-jobs.md.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ..client import AsyncClient, Client
from ..exceptions import ConfigError
from ..jobs import Job
from ..registry import AnyActor, Registry
from .drain import DEFAULT_MAX_RUNS, Ran
from .drain import drain_async as _drain_async

__all__ = [
    "Ran",
    "assert_enqueued",
    "assert_enqueued_async",
    "assert_not_enqueued",
    "drain",
    "drain_async",
    "use",
]

LIST_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class _Defaults:
    client: Client | AsyncClient
    registry: Registry | None


_defaults: list[_Defaults] = []


@contextmanager
def use(client: Client | AsyncClient, registry: Registry | None = None) -> Iterator[None]:
    """Make ``client`` (and ``registry``) the default of ``drain`` and ``assert_enqueued``
    inside the ``with`` block (the ``taskq_client`` fixture does this for each test)."""
    _defaults.append(_Defaults(client, registry))
    try:
        yield
    finally:
        _defaults.pop()


def _client(client: Client | AsyncClient | None) -> Client | AsyncClient:
    if client is not None:
        return client
    if not _defaults:
        raise ConfigError(
            "no taskq client: pass client=, use the taskq_client pytest fixture, "
            "or wrap the test in taskq.testing.use(client, registry)"
        )
    return _defaults[-1].client


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    if _defaults and _defaults[-1].registry is not None:
        return _defaults[-1].registry
    raise ConfigError(
        "drain needs the registry whose actors it runs: pass registry=, set the "
        "taskq_actors ini option (MODULE:ATTR), or override the taskq_registry fixture"
    )


# -- drain ---------------------------------------------------------------------------
def drain(
    client: Client | None = None,
    queue: str | Sequence[str] | None = None,
    *,
    registry: Registry | None = None,
    scheduled: bool = True,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> list[Ran]:
    """Run queued jobs here, one at a time, until none is left; return the runs.

    ``queue``: one queue, several, or all (``None``). ``scheduled``: also run jobs that
    wait for a later time (delays, retry backoff), jumping the clock instead of
    sleeping. Raises ``AssertionError`` past ``max_runs`` runs."""
    chosen = _client(client)
    if not isinstance(chosen, Client):
        raise ConfigError("drain takes a taskq.Client; use drain_async for an AsyncClient")
    coro = _drain_async(
        chosen.async_client,
        _registry(registry),
        queue,
        scheduled=scheduled,
        max_runs=max_runs,
    )
    return chosen.run(coro)


async def drain_async(
    client: AsyncClient | None = None,
    queue: str | Sequence[str] | None = None,
    *,
    registry: Registry | None = None,
    scheduled: bool = True,
    max_runs: int = DEFAULT_MAX_RUNS,
) -> list[Ran]:
    """``drain`` for an ``AsyncClient`` (async actors run on the caller's loop)."""
    chosen = _client(client)
    if not isinstance(chosen, AsyncClient):
        raise ConfigError("drain_async takes a taskq.AsyncClient; use drain for a Client")
    return await _drain_async(
        chosen, _registry(registry), queue, scheduled=scheduled, max_runs=max_runs
    )


# -- assertions ----------------------------------------------------------------------
def _name(actor: AnyActor | str) -> str:
    return actor if isinstance(actor, str) else actor.name


def _as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _matching(
    jobs: list[Job],
    actor: str,
    args: Sequence[Any] | None,
    kwargs: dict[str, Any] | None,
) -> tuple[list[Job], list[Job]]:
    """(jobs matching everything, jobs of the actor): the second explains a miss."""
    of_actor = [j for j in jobs if j.actor == actor]
    want_args = None if args is None else _as_json(list(args))
    want_kwargs = None if kwargs is None else _as_json(dict(kwargs))
    hits = [
        j
        for j in of_actor
        if (want_args is None or j.args == want_args)
        and (want_kwargs is None or j.kwargs == want_kwargs)
    ]
    return hits, of_actor


def _judge(
    jobs: list[Job],
    *,
    actor: str,
    args: Sequence[Any] | None,
    kwargs: dict[str, Any] | None,
    queue: str | None,
    state: str | None,
    count: int | None,
) -> list[Job]:
    """The jobs of ``actor`` among ``jobs`` matching the filters (oldest first), or an
    ``AssertionError`` saying what was wanted and what was found."""
    __tracebackhide__ = True  # pytest: the failure points at the test, not here
    hits, of_actor = _matching(jobs, actor, args, kwargs)
    ok = len(hits) == count if count is not None else bool(hits)
    if ok:
        hits.sort(key=lambda j: j.id)
        return hits
    wanted = [f"actor={actor!r}"]
    wanted += [f"args={list(args)!r}"] if args is not None else []
    wanted += [f"kwargs={dict(kwargs)!r}"] if kwargs is not None else []
    wanted += [f"queue={queue!r}"] if queue is not None else []
    wanted += [f"state={state!r}"] if state is not None else []
    expected = {None: "a job", 0: "no job"}.get(count, f"exactly {count} job(s)")
    seen = (
        "; ".join(
            f"{j.queue}/{j.state} args={j.args!r} kwargs={j.kwargs!r}"
            for j in sorted(of_actor, key=lambda j: j.id)[:10]
        )
        or "none"
    )
    raise AssertionError(
        f"expected {expected} with {', '.join(wanted)}; found {len(hits)}. "
        f"Jobs of {actor!r} there: {seen}"
    )


def assert_enqueued(
    actor: AnyActor | str,
    *,
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    queue: str | None = None,
    state: str | None = "queued",
    count: int | None = None,
    client: Client | None = None,
) -> list[Job]:
    """Assert that jobs of ``actor`` were enqueued; return them (oldest first).

    ``args``/``kwargs`` must equal the job's (as JSON: a tuple matches a list); left
    ``None`` they match anything. ``state`` (default ``queued``; ``None``: any state)
    and ``queue`` narrow the search. ``count``: exactly that many, else at least one.
    The ``AssertionError`` lists the jobs of that actor that were found instead."""
    __tracebackhide__ = True
    chosen = _client(client)
    if not isinstance(chosen, Client):
        raise ConfigError("assert_enqueued takes a taskq.Client; use assert_enqueued_async")
    jobs = chosen.list(state=state, queue=queue, limit=LIST_LIMIT)
    return _judge(
        jobs, actor=_name(actor), args=args, kwargs=kwargs, queue=queue, state=state, count=count
    )


def assert_not_enqueued(
    actor: AnyActor | str,
    *,
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    queue: str | None = None,
    state: str | None = "queued",
    client: Client | None = None,
) -> None:
    """Assert that no job of ``actor`` matching these filters is there."""
    __tracebackhide__ = True
    assert_enqueued(
        actor, args=args, kwargs=kwargs, queue=queue, state=state, count=0, client=client
    )


async def assert_enqueued_async(
    actor: AnyActor | str,
    *,
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    queue: str | None = None,
    state: str | None = "queued",
    count: int | None = None,
    client: AsyncClient | None = None,
) -> list[Job]:
    """``assert_enqueued`` for an ``AsyncClient``."""
    __tracebackhide__ = True
    chosen = _client(client)
    if not isinstance(chosen, AsyncClient):
        raise ConfigError("assert_enqueued_async takes a taskq.AsyncClient")
    jobs = await chosen.list(state=state, queue=queue, limit=LIST_LIMIT)
    return _judge(
        jobs, actor=_name(actor), args=args, kwargs=kwargs, queue=queue, state=state, count=count
    )
