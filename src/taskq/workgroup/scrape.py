"""The children's worker metrics, served by the supervisor's ``/metrics``.

Under a workgroup every child serves ``/metrics`` only on its Unix health socket, which
no Prometheus can reach. On each scrape of the supervisor, ``scrape_children`` reads
every running child's ``/metrics`` over its socket (concurrently, each bounded by
``SCRAPE_TIMEOUT``), adds a ``worker="<name>"`` label to every sample and merges the
families, so one scrape of the supervisor gives the workgroup's series and all of its
workers'.

A child's counters start from zero when it is restarted, like any process's: Prometheus'
``rate()`` and ``increase()`` treat a drop as a counter reset, which is what the shipped
alert rules use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from .. import metrics, redaction
from ..events import WORKGROUP_CHILD_METRICS_UNREADABLE, WORKGROUP_CHILD_SCRAPE_FAILED
from ..logs import get_logger

log = get_logger(__name__)

#: one child's answer, connect to last byte
SCRAPE_TIMEOUT = 2.0
#: a child's metrics page larger than this is cut off (and counted as failed)
MAX_BODY = 8 * 1024 * 1024
#: the label naming the child a series came from
WORKER_LABEL = "worker"


async def fetch_unix(path: str, target: str = "/metrics") -> bytes:
    """GET ``target`` over the Unix socket ``path``; the body. Raises OSError, TimeoutError
    or ValueError (not a 200)."""
    status, head, body = await get_unix(path, target)
    if status != 200:
        raise ValueError(f"answered {head[:40]!r}")
    return body


async def get_unix(path: str, target: str) -> tuple[int | None, bytes, bytes]:
    """GET ``target`` over the Unix socket ``path``: (status, head, body). Raises OSError
    or ValueError (a body over ``MAX_BODY``)."""
    reader, writer = await asyncio.open_unix_connection(path, limit=MAX_BODY)
    try:
        writer.write(f"GET {target} HTTP/1.0\r\nHost: child\r\n\r\n".encode())
        await writer.drain()
        raw = await reader.read(MAX_BODY + 1)
        while raw and len(raw) <= MAX_BODY:
            more = await reader.read(MAX_BODY + 1 - len(raw))
            if not more:
                break
            raw += more
    finally:
        writer.close()
        try:
            await writer.wait_closed()
        except (ConnectionError, OSError):
            pass
    if len(raw) > MAX_BODY:
        raise ValueError(f"metrics larger than {MAX_BODY} bytes")
    head, _, body = raw.partition(b"\r\n\r\n")
    status = head.split(b"\r\n", 1)[0].split()
    code = int(status[1]) if len(status) >= 2 and status[1].isdigit() else None
    return code, head, body


async def _one(name: str, path: str) -> tuple[str, bytes | None]:
    try:
        return name, await asyncio.wait_for(fetch_unix(path), SCRAPE_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        log.event(WORKGROUP_CHILD_SCRAPE_FAILED, worker=name, error=str(exc) or type(exc).__name__)
        return name, None


async def scrape_children(children: Sequence[tuple[str, str]]) -> dict[str, bytes | None]:
    """``{name: metrics text or None}`` for ``(name, socket path)`` pairs, all at once."""
    results = await asyncio.gather(*(_one(name, path) for name, path in children))
    return dict(results)


async def child_not_ready(name: str, path: str) -> str | None:
    """Why the child behind the socket ``path`` is not ready (its own ``/ready`` answer,
    or that it did not answer), None when it answers 200."""
    try:
        status, _, body = await asyncio.wait_for(get_unix(path, "/ready"), SCRAPE_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as exc:
        return f"{name} starting (its health socket does not answer yet: {type(exc).__name__})"
    if status == 200:
        return None
    return f"{name}: {redaction.text(body.decode('utf-8', 'replace').strip())}"


def _labelled(families: Iterable[Metric], worker: str) -> Iterator[Metric]:
    for family in families:
        family.samples = [
            Sample(s.name, {**s.labels, WORKER_LABEL: worker}, s.value, s.timestamp, s.exemplar)
            for s in family.samples
        ]
        yield family


class MergedMetrics:
    """A collector for ``generate_latest``: the supervisor's own registry, then every
    child family once (the samples of all children under one HELP/TYPE)."""

    def __init__(self, own: metrics.Registry, children: dict[str, bytes | None]) -> None:
        self._own = own
        self._children = children

    def collect(self) -> Iterator[Metric]:
        yield from self._own.collect()
        merged: dict[str, Metric] = {}
        for worker, text in sorted(self._children.items()):
            if text is None:
                continue
            try:
                families = list(text_string_to_metric_families(text.decode("utf-8")))
            except ValueError as exc:
                log.event(WORKGROUP_CHILD_METRICS_UNREADABLE, worker=worker, error=str(exc))
                continue
            for family in _labelled(families, worker):
                known = merged.get(family.name)
                if known is None:
                    merged[family.name] = family
                elif known.type == family.type:
                    known.samples.extend(family.samples)
        yield from merged.values()
