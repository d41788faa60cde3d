"""Property: any JSON arguments come back from the store unchanged, on both engines."""

from __future__ import annotations

import asyncio
import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from taskq.ids import uuid7
from taskq.jobs import JobSpec
from taskq.payload import encode_arguments
from taskq.store import create_store

text = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text  # any unicode but NUL and lone surrogates, which enqueue refuses (InvalidText)
    | st.sampled_from(["\U0001f600", "\u2028", '"\\', "é\u0301", "\x01\x7f"])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(text, inner, max_size=5),
    max_leaves=25,
)


def same(a, b) -> bool:
    """Equality that also tells 0.0 from -0.0 and int from float (JSON keeps both)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def test_arguments_round_trip_unchanged(target):
    loop = asyncio.new_event_loop()
    store = create_store(target.dsn, target.schema)
    loop.run_until_complete(store.open())
    worker = uuid7()
    try:
        loop.run_until_complete(store.migrate())

        @settings(
            max_examples=60,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture],
        )
        @given(
            args=st.lists(json_values, max_size=6),
            kwargs=st.dictionaries(text, json_values, max_size=6),
        )
        def check(args, kwargs):
            args_json, kwargs_json = encode_arguments(args, kwargs, actor="tests.echo")
            spec = JobSpec(
                id=uuid7(),
                actor="tests.echo",
                queue="roundtrip",
                args_json=args_json,
                kwargs_json=kwargs_json,
            )
            loop.run_until_complete(store.enqueue([spec]))
            job = loop.run_until_complete(store.get_job(spec.id))
            assert same(job.args, args) and same(job.kwargs, kwargs)
            (claimed,) = loop.run_until_complete(store.claim(worker, ["roundtrip"], 1, 30.0))
            assert claimed.id == spec.id
            assert claimed.args_json == args_json  # stored verbatim
            assert claimed.kwargs_json == kwargs_json
            assert same(json.loads(claimed.args_json), args)

        check()
    finally:
        loop.run_until_complete(store.close())
        loop.close()
