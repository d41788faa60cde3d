"""Bad input has one answer on both stores (issue 21 item 6): a NUL character, a lone
surrogate (bytes that are not UTF-8), nesting deeper than ``MAX_JSON_DEPTH`` and an
integer outside what a Postgres ``integer`` holds are refused by the API with a taskq
error before anything is written, on SQLite exactly as on Postgres; a result that
cannot be stored is dropped (the job succeeded) the same on both."""

from __future__ import annotations

from typing import Any

import pytest

from taskq import AsyncClient, Client
from taskq.exceptions import ActorNotFound, ConfigError, InvalidText, PayloadTooDeep, TaskqError
from taskq.validation import INT_MAX, INT_MIN, MAX_JSON_DEPTH
from tests.support import dashboard_actors as actors
from tests.support import result_actors
from tests.support.worker_harness import running_worker, wait_for_states


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


SURROGATE = b"\xff".decode("utf-8", "surrogateescape")  # what argv makes of a 0xff byte

REFUSED: list[tuple[str, dict[str, Any], type[TaskqError]]] = [
    ("NUL in an argument", {"args": ["a\x00b"]}, InvalidText),
    ("NUL in a keyword argument's name", {"kwargs": {"a\x00": 1}}, InvalidText),
    ("NUL in meta", {"meta": {"note": "\x00"}}, InvalidText),
    ("a lone surrogate in an argument", {"args": [SURROGATE]}, InvalidText),
    ("a lone surrogate in meta", {"meta": {SURROGATE: 1}}, InvalidText),
    ("a lone surrogate in a unique key", {"unique_key": "k" + SURROGATE}, InvalidText),
    ("a NUL in a unique key", {"unique_key": "k\x00"}, InvalidText),
    ("arguments nested too deep", {"args": nested(MAX_JSON_DEPTH + 1)}, PayloadTooDeep),
    ("arguments nested 5,000 deep", {"args": nested(5000)}, PayloadTooDeep),
    (
        "a keyword argument nested too deep",
        {"kwargs": {"x": nested(MAX_JSON_DEPTH)}},
        PayloadTooDeep,
    ),
    ("meta nested too deep", {"meta": {"x": nested(MAX_JSON_DEPTH)}}, PayloadTooDeep),
    ("a tag with a surrogate", {"tags": ["t" + SURROGATE]}, TaskqError),
    ("a priority past 2**31 - 1", {"priority": INT_MAX + 1}, ConfigError),
    ("a priority below -2**31", {"priority": INT_MIN - 1}, ConfigError),
    ("a priority of 2**40", {"priority": 2**40}, ConfigError),
    ("a priority past SQLite's integers", {"priority": 10**20}, ConfigError),
    ("a delay past the year 9999", {"delay": 1e300}, ConfigError),
]


@pytest.mark.parametrize(("case", "options", "error"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refused_at_enqueue_alike_on_both_stores_and_nothing_written(
    client: Client, case: str, options: dict[str, Any], error: type[TaskqError]
) -> None:
    options = dict(options)
    args, kwargs = options.pop("args", [1, 2]), options.pop("kwargs", {})
    key = options.pop("unique_key", None)
    with pytest.raises(error):
        client.enqueue_with(actors.add, args, kwargs, unique_key=key, **options)
    with pytest.raises(error):  # a batch with one bad job writes none of them
        if options:
            client.enqueue_many(actors.add, [((1, 2), {}), ((3, 4), {})], **options)
        else:
            client.enqueue_many(
                actors.add, [((1, 2), {}), (tuple(args), kwargs)], unique_keys=[None, key]
            )
    assert sum(client.stats().values()) == 0, case


def test_the_limits_are_inclusive(client: Client) -> None:
    ids = [
        client.enqueue_with(actors.add, [nested(MAX_JSON_DEPTH - 1), 2], priority=INT_MAX),
        client.enqueue_with(
            actors.add, [1, 2], priority=INT_MIN, meta={"x": nested(MAX_JSON_DEPTH - 1)}
        ),
        client.enqueue_with(actors.add, ["a\\u0000b", "c"]),  # an escaped backslash, not a NUL
    ]
    first, second, third = (client.get(i) for i in ids)
    assert first.priority == INT_MAX and first.args == [nested(MAX_JSON_DEPTH - 1), 2]
    assert second.priority == INT_MIN and second.meta == {"x": nested(MAX_JSON_DEPTH - 1)}
    assert third.args == ["a\\u0000b", "c"]


@pytest.mark.parametrize(
    ("limits", "error"),
    [
        ({"concurrency": INT_MAX + 1}, ConfigError),
        ({"concurrency": 0}, ConfigError),
        ({"concurrency": True}, ConfigError),
        ({"rate": f"{INT_MAX + 1}/second"}, ConfigError),
        ({"rate": f"{10**30}/minute"}, ConfigError),
    ],
)
def test_limits_out_of_range_are_refused_alike(client: Client, limits, error) -> None:
    with pytest.raises(error):
        client.set_queue_limits("q", **limits)
    with pytest.raises(error):
        client.set_actor_limits(actors.add, **limits)
    assert client.limits() == {}
    client.set_queue_limits("q", concurrency=INT_MAX, rate=f"{INT_MAX}/hour")
    assert client.limits()[("queue", "q")].concurrency == INT_MAX


def test_an_actor_limit_of_an_unknown_name_is_refused_by_the_sync_client(client: Client) -> None:
    """The check of ``taskq actors limit`` is the client's: the sync ``Client`` refuses a
    name no worker recorded too, and writes nothing."""
    with pytest.raises(ActorNotFound, match=r"'dashboard_add' \(recorded: none yet\)"):
        client.set_actor_limits("dashboard_add", concurrency=2)
    assert client.limits() == {}
    client.set_actor_limits(actors.add, concurrency=2)  # the Actor itself: set
    assert client.limits()[("actor", actors.add.name)].concurrency == 2


@pytest.mark.parametrize("bad", ["q\x00", "q" + SURROGATE])
def test_list_filters_with_bad_text_are_refused(client: Client, bad: str) -> None:
    for field in ("queue", "tag"):
        with pytest.raises(InvalidText):
            client.list(**{field: bad})


async def test_a_result_that_cannot_be_stored_alike_is_dropped_alike(target, store) -> None:
    async with AsyncClient(store=store) as client:
        ids = {
            kind: await client.enqueue(result_actors.async_unstorable, kind)
            for kind in ("nul", "deep")
        }
        async with running_worker(target, actors="tests.support.result_actors:registry"):
            done = await wait_for_states(
                store, list(ids.values()), {"succeeded", "dead"}, timeout=60
            )
    by_id = {job.id: job for job in done}
    nul, deep = by_id[ids["nul"]], by_id[ids["deep"]]
    assert nul.state == deep.state == "succeeded"
    assert nul.result is None and "NUL character" in (nul.last_error or "")
    assert deep.result is None and "MAX_JSON_DEPTH" in (deep.last_error or "")
