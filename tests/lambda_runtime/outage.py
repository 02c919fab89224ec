"""Backends that stop answering, on loopback: a socket that accepts connections and never answers, and a
proxy to a live server that does the same while stalled."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

CHUNK = 65536
ACCEPT_SECONDS = 0.2  # how often the accept loop looks whether it should stop


@contextmanager
def silent_server() -> Iterator[str]:
    """A URL whose connections the kernel accepts (the listen backlog) and nobody ever answers."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


class StallingProxy:
    """A TCP proxy to `target` (a URL); while `stalled` is set, new connections are held and never
    answered, as a node stuck in a long GC pause or a network partition holds them."""

    def __init__(self, target: str) -> None:
        parts = urlsplit(target)
        self._target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.stalled = threading.Event()
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(ACCEPT_SECONDS)
        self._open: list[socket.socket] = []
        self._closing = threading.Event()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._closing.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._open.append(conn)
            if not self.stalled.is_set():
                upstream = socket.create_connection(self._target)
                self._open.append(upstream)
                for src, dst in ((conn, upstream), (upstream, conn)):
                    threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := src.recv(CHUNK):
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closing.set()
        self._thread.join(timeout=5)
        self._sock.close()
        for conn in self._open:
            conn.close()
