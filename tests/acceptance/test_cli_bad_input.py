"""The review's reproductions of bad input on the command line (issue 21 item 6): each
is one ``taskq:`` line and a non-zero exit on both stores, never a traceback, and
nothing is written. Real ``taskq`` subprocesses; invalid UTF-8 is passed as the bytes
a shell would pass."""

from __future__ import annotations

import os

import pytest

import taskq
from tests.acceptance.test_cli import assert_one_line_error
from tests.acceptance.test_cli import taskq as run
from tests.conftest import StoreTarget

BAD_BYTE = os.fsdecode(b"\xff")  # subprocess passes it on as the byte 0xff
DEEP = "[" * 5000 + "]" * 5000

CASES = [
    (("enqueue", "a", "--queue", "q", "--args", f'["{BAD_BYTE}"]'), "lone surrogate"),
    (("enqueue", "a", "--queue", "q" + BAD_BYTE), "invalid queue name"),
    (("enqueue", "a", "--queue", "q", "--tag", "t" + BAD_BYTE), "tag"),
    (("enqueue", "a", "--queue", "q", "--unique-key", "k" + BAD_BYTE), "lone surrogate"),
    (("enqueue", "a" + BAD_BYTE, "--queue", "q"), "invalid actor name"),
    (("enqueue", "a", "--queue", "q", "--args", '["a\\u0000b"]'), "NUL"),
    (("enqueue", "a", "--queue", "q", "--kwargs", '{"k": "\\u0000"}'), "NUL"),
    (("enqueue", "a", "--queue", "q", "--meta", '{"k": "\\u0000"}'), "NUL"),
    (("enqueue", "a", "--queue", "q", "--args", DEEP), "MAX_JSON_DEPTH"),
    (
        ("enqueue", "a", "--queue", "q", "--meta", '{"a":' * 5000 + "1" + "}" * 5000),
        "MAX_JSON_DEPTH",
    ),
    (("enqueue", "a", "--queue", "q", "--args", "[" * 100 + "]" * 100), "MAX_JSON_DEPTH"),
    (("enqueue", "a", "--queue", "q", "--priority", "99999999999999999999"), "priority"),
    (("enqueue", "a", "--queue", "q", "--priority", str(2**40)), "priority"),
    (("queues", "limit", "q", "--concurrency", "99999999999999999999"), "concurrency"),
    (("queues", "limit", "q", "--rate", "99999999999999999999/second"), "rate"),
    (("jobs", "list", "--tag", "t" + BAD_BYTE), "lone surrogate"),
    (("jobs", "list", "--queue", "q" + BAD_BYTE), "lone surrogate"),
    (("jobs", "show", "x" + BAD_BYTE), "job id"),
]


@pytest.mark.parametrize(("args", "fragment"), CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_is_one_line_on_both_stores_and_writes_nothing(
    target: StoreTarget, args: tuple[str, ...], fragment: str
) -> None:
    run(target, "migrate")
    assert_one_line_error(run(target, *args, check=False), fragment)
    with taskq.Client(target.dsn, schema=target.schema) as client:
        assert sum(client.stats().values()) == 0
        assert client.limits() == {}
