"""JobContext's meta as claimed (``meta_json``) is decoded when read, with the same
results as decoding it up front."""

from __future__ import annotations

import json

from taskq.context import JobContext
from taskq.ids import uuid7


def _ctx(meta_json: str | None) -> JobContext:
    return JobContext(uuid7(), actor="a", queue="q", attempt=1, meta_json=meta_json)


def test_claimed_meta_is_read_back() -> None:
    assert dict(_ctx('{"stage": 2}').meta) == {"stage": 2}


def test_no_meta_or_not_an_object_reads_as_empty() -> None:
    assert dict(_ctx(None).meta) == {}
    assert dict(_ctx("[1, 2]").meta) == {}


def test_unread_unchanged_meta_is_not_saved() -> None:
    assert _ctx('{"stage": 2}').changed_meta_json is None


def test_update_merges_with_claimed_meta() -> None:
    ctx = _ctx('{"stage": 2, "keep": true}')
    ctx.update_meta(stage=3)
    changed = ctx.changed_meta_json
    assert changed is not None
    assert json.loads(changed) == {"stage": 3, "keep": True}


def test_claimed_meta_travels_to_a_pool_process() -> None:
    back = JobContext.from_text(_ctx('{"stage": 2}').to_json())
    assert dict(back.meta) == {"stage": 2}
