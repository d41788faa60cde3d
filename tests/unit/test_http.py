"""The shared endpoint server, over real sockets: methods, paths, bad requests."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from taskq.http import EndpointServer


async def _route(path: str) -> tuple[int, str, bytes]:
    if path == "/ok":
        return 200, "text/plain", b"fine\n"
    return 404, "text/plain", b"nope\n"


async def _exchange(request: bytes, *, port: int | None = None, path: str | None = None) -> bytes:
    if path is not None:
        reader, writer = await asyncio.open_unix_connection(path)
    else:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(request)
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    return answer


async def test_get_head_query_and_unknown_paths() -> None:
    server = EndpointServer(_route, name="test")
    port = await server.start_tcp("127.0.0.1", 0)
    try:
        got = await _exchange(b"GET /ok?x=1 HTTP/1.1\r\nHost: a\r\n\r\n", port=port)
        assert got.startswith(b"HTTP/1.0 200 OK\r\n") and got.endswith(b"\r\n\r\nfine\n")
        assert b"Content-Length: 5\r\n" in got
        head = await _exchange(b"HEAD /ok HTTP/1.1\r\n\r\n", port=port)
        assert head.startswith(b"HTTP/1.0 200 OK") and head.endswith(b"\r\n\r\n")
        assert (await _exchange(b"GET /x HTTP/1.1\r\n\r\n", port=port)).startswith(
            b"HTTP/1.0 404 Not Found"
        )
        assert (await _exchange(b"POST /ok HTTP/1.1\r\n\r\n", port=port)).startswith(
            b"HTTP/1.0 405 Method Not Allowed"
        )
        assert (await _exchange(b"nonsense\r\n\r\n", port=port)).startswith(
            b"HTTP/1.0 400 Bad Request"
        )
    finally:
        await server.close()


async def test_unix_socket_replaces_a_stale_socket_and_is_removed(tmp_path: Path) -> None:
    path = str(tmp_path / "h.sock")
    stale = EndpointServer(_route, name="stale")
    await stale.start_unix(path)
    assert stale._server is not None
    stale._server.close()  # closed without cleanup: the socket file stays behind
    await stale._server.wait_closed()
    assert os.path.exists(path)
    server = EndpointServer(_route, name="test")
    await server.start_unix(path)
    try:
        assert (await _exchange(b"GET /ok HTTP/1.0\r\n\r\n", path=path)).endswith(b"fine\n")
    finally:
        await server.close()
    assert not os.path.exists(path)
