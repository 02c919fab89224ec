"""Worker processes for the local server: the parent binds the socket once and forks N workers that
accept on it (the kernel hands each connection to one of them); each worker builds its own adapters
(SQLite connections, the model) after the fork and shares the data through the SQLite WAL file. The
parent restarts a worker that dies and stops them all on SIGINT/SIGTERM."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Protocol

STOP_GRACE_SECONDS = 10.0  # a stopping worker finishes its in-flight requests within this
RESPAWN_PAUSE_SECONDS = 1.0  # a worker that keeps dying is restarted at most this often
BACKLOG = 128


class Server(Protocol):
    def serve_forever(self) -> None: ...
    def shutdown(self) -> None: ...
    def server_close(self) -> None: ...


StartWorker = Callable[[socket.socket], Server]


def default_workers() -> int:
    """One worker per core this process may run on (docs/architecture.md, Entry points: use every core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def listen(host: str, port: int) -> socket.socket:
    """The listening socket every worker accepts on. Non-blocking: every worker waiting in poll() wakes for
    a new connection and all but one find nothing to accept — with a blocking socket that one sat in
    accept() until the next connection, through SIGTERM (Python resumes the call after the handler), and
    stopping the server waited out the grace period. socketserver skips an accept() that fails; the
    accepted connections are blocking as usual."""
    sock = socket.create_server((host, port), backlog=BACKLOG)
    sock.setblocking(False)
    return sock


def run_worker(sock: socket.socket, start: StartWorker) -> None:
    """Serve on `sock` until SIGTERM/SIGINT, then finish in-flight requests and return."""
    server = start(sock)

    def stop(signum: int, frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        server.serve_forever()
    finally:
        server.server_close()


class Supervisor:
    """Forks and watches the worker processes."""

    def __init__(self, sock: socket.socket, workers: int, start: StartWorker) -> None:
        self.sock = sock
        self.workers = workers
        self.start = start
        self.pids: set[int] = set()
        self.stopping = False

    def _spawn(self) -> None:
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                signal.signal(signal.SIGINT, signal.SIG_DFL)
                run_worker(self.sock, self.start)
            except BaseException:  # noqa: BLE001 - a worker reports through its exit code
                code = 1
            finally:
                os._exit(code)
        self.pids.add(pid)

    def spawn_all(self) -> None:
        """Start every worker."""
        for _ in range(self.workers):
            self._spawn()

    def watch(self) -> None:
        """Restart workers that die, until `stop`."""
        while not self.stopping and self.pids:
            try:
                pid, _status = os.wait()
            except ChildProcessError:
                return
            except InterruptedError:
                continue
            self.pids.discard(pid)
            if not self.stopping:
                time.sleep(RESPAWN_PAUSE_SECONDS)
                self._spawn()

    def stop(self) -> None:
        """Ask every worker to finish and wait for them (SIGKILL after the grace period)."""
        self.stopping = True
        for pid in list(self.pids):
            _signal(pid, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while self.pids and time.monotonic() < deadline:
            for pid in list(self.pids):
                if _reaped(pid, os.WNOHANG):
                    self.pids.discard(pid)
            time.sleep(0.05)
        for pid in list(self.pids):
            _signal(pid, signal.SIGKILL)
            _reaped(pid, 0)
            self.pids.discard(pid)


def _reaped(pid: int, flags: int) -> bool:
    """Whether `pid` has exited and been collected; a watcher thread may have collected it first."""
    try:
        done, _ = os.waitpid(pid, flags)
    except ChildProcessError:
        return True
    return done != 0


def _signal(pid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


class _Stop(Exception):
    """Raised by the parent's signal handler to leave `os.wait`."""


def serve(sock: socket.socket, workers: int, start: StartWorker) -> None:
    """Serve until SIGINT/SIGTERM: in this process when `workers` is 1, else in forked workers."""
    if workers <= 1:
        run_worker(sock, start)
        return
    supervisor = Supervisor(sock, workers, start)

    def stop(signum: int, frame: FrameType | None) -> None:
        if supervisor.stopping:
            return  # a second Ctrl-C or SIGTERM: the stop under way still waits for every worker
        supervisor.stopping = True
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    supervisor.spawn_all()
    try:
        supervisor.watch()
    except _Stop:
        pass
    finally:
        supervisor.stop()
        sock.close()
