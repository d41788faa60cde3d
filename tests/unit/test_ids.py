"""UUIDv7s are time-ordered, unique and of version 7, one at a time or in batches."""

from __future__ import annotations

import pickle
import time
from uuid import UUID

from taskq.ids import uuid7, uuid7_ints, uuid7_many
from taskq.jobs import JobId, new_job_ids


def test_single_and_batch_ids_interleave_in_order() -> None:
    ids = [uuid7(), *uuid7_many(5000), uuid7(), *uuid7_many(3), uuid7()]
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    assert all(u.version == 7 and u.variant == "specified in RFC 4122" for u in ids)


def test_the_timestamp_is_the_creation_time_in_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    (u,) = uuid7_many(1)
    after = time.time_ns() // 1_000_000
    assert before <= u.int >> 80 <= after + 1  # +1: a counter overflow borrows the next ms


def test_empty_batch() -> None:
    assert uuid7_many(0) == []


def test_job_id_from_a_uuid_or_its_text_is_the_same_id() -> None:
    raw = uuid7()
    for value in (raw, str(raw)):
        job_id = JobId(value, duplicate=True)
        assert job_id == raw and str(job_id) == str(raw) and job_id.version == 7
        assert job_id.duplicate and pickle.loads(pickle.dumps(job_id)).duplicate
    assert not JobId(raw).duplicate


def test_batch_ints_are_the_same_ids_without_objects() -> None:
    """More ids than one millisecond's 4,096 counters: later ones borrow the next ms."""
    values = [uuid7().int, *uuid7_ints(10_000), uuid7().int, *uuid7_ints(1), uuid7().int]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert all(UUID(int=v).version == 7 for v in values)
    assert uuid7_ints(0) == []


def test_new_job_ids_are_plain_job_ids() -> None:
    values = uuid7_ints(3)
    ids = new_job_ids(values)
    for job_id, value in zip(ids, values, strict=True):
        same = JobId(UUID(int=value))
        assert type(job_id) is JobId and job_id == same and hash(job_id) == hash(same)
        assert str(job_id) == str(same) and repr(job_id) == repr(same)
        assert not job_id.duplicate and job_id.is_safe == same.is_safe
        assert pickle.loads(pickle.dumps(job_id)) == same
