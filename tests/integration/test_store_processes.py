"""Several real processes on one store: concurrent producers lose nothing."""

from __future__ import annotations

import json
import textwrap

from taskq.store import create_store
from tests.support.helpers import start_script, wait_until

PRODUCER = textwrap.dedent("""
    import asyncio, json, os, sys, time
    from pathlib import Path
    from taskq.ids import uuid7
    from taskq.jobs import JobSpec
    from taskq.store import create_store

    go, ready = Path(sys.argv[1]), Path(sys.argv[2])

    def spec(n):
        return JobSpec(id=uuid7(), actor="tests.echo", queue="default",
                       args_json=json.dumps([os.getpid(), n]), kwargs_json="{}")

    async def main():
        store = create_store()  # TASKQ_DSN / TASKQ_SCHEMA from the environment
        await store.open()
        ready.touch()
        deadline = time.monotonic() + 30
        while not go.exists():  # start together with the other producer
            if time.monotonic() > deadline:
                sys.exit("no go signal")
            await asyncio.sleep(0.005)
        ids = []
        try:
            for round_ in range(20):
                ids += await store.enqueue([spec(round_ * 100 + i) for i in range(40)])
                for i in range(10):
                    ids += await store.enqueue([spec(round_ * 100 + 50 + i)])
        finally:
            await store.close()
        print(json.dumps([str(i) for i in ids]))

    asyncio.run(main())
""")


async def test_two_processes_enqueue_concurrently_and_every_row_lands(store, target, tmp_path):
    go = tmp_path / "go"
    ready = [tmp_path / f"ready-{n}" for n in range(2)]
    producers = [start_script(PRODUCER, str(go), str(r), env=target.env) for r in ready]
    pairs = list(zip(ready, producers, strict=True))
    wait_until(
        lambda: all(r.exists() or p.poll() is not None for r, p in pairs),
        timeout=60,
        what="both producers connected",
    )
    go.touch()
    sent: list[str] = []
    for proc in producers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
        sent += json.loads(out)
    assert len(sent) == 2 * 20 * 50 == len(set(sent))
    assert (await store.stats())["queued"] == len(sent)
    listed = {str(j.id) for j in await store.list_jobs(limit=len(sent) + 10)}
    assert listed == set(sent)


async def test_a_second_store_sees_the_first_stores_writes(target, store):
    other = create_store(target.dsn, target.schema)
    await other.open()
    try:
        await other.check_schema()
        assert await other.stats() == await store.stats()
    finally:
        await other.close()
