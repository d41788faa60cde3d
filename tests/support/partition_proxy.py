"""A loopback TCP proxy that can cut the network without closing anything.

``PartitionProxy(upstream_host, upstream_port)`` listens on 127.0.0.1 (a free port) and
forwards every connection to the upstream. ``cut()`` stops forwarding in both directions:
sockets stay open, bytes wait in buffers, calls hang, exactly like a network partition
(no RST, no FIN). ``heal()`` resumes forwarding of everything that waited. Threads, not
asyncio, so it works the same beside sync and async tests and subprocess workers.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from urllib.parse import urlsplit, urlunsplit


class PartitionProxy:
    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._flowing = threading.Event()
        self._flowing.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self.connections = 0
        self._threads = [threading.Thread(target=self._accept, daemon=True, name="proxy-accept")]
        self._threads[0].start()

    @classmethod
    def for_dsn(cls, dsn: str) -> PartitionProxy:
        parts = urlsplit(dsn)
        return cls(parts.hostname or "127.0.0.1", parts.port or 5432)

    def dsn(self, dsn: str) -> str:
        """``dsn`` with its host and port replaced by this proxy's."""
        parts = urlsplit(dsn)
        user = f"{parts.username}@" if parts.username else ""
        if parts.password:
            user = f"{parts.username}:{parts.password}@"
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    @property
    def cut_off(self) -> bool:
        return not self._flowing.is_set()

    def cut(self) -> None:
        self._flowing.clear()

    def heal(self) -> None:
        self._flowing.set()

    def close(self) -> None:
        self._closed.set()
        self._flowing.set()  # let waiting pumps run into the closed sockets and end
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in [self._listener, *sockets]:
            # shutdown() first: a bare close() neither wakes a pump (or the acceptor)
            # blocked in recv() on that socket nor sends a FIN while it waits, so the
            # upstream connection, and the Postgres backend behind it with whatever
            # transaction a killed worker left open, would outlive the proxy.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def __enter__(self) -> PartitionProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self.upstream, timeout=10)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, server]
                self.connections += 1
            for src, dst in ((client, server), (server, client)):
                thread = threading.Thread(target=self._pump, args=(src, dst), daemon=True)
                thread.start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                self._flowing.wait()  # cut: hold the bytes, close nothing
                if self._closed.is_set():
                    return
                if not data:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
        except OSError:
            with contextlib.suppress(OSError):
                dst.close()
