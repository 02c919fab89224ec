"""`FileLinkReader`: the LinkReader port over one root directory (QUARRY_LINKS_ROOT).

A path is resolved component by component from a descriptor of the root, never by name from `/`: each
directory is opened with `openat(dir_fd, name, O_DIRECTORY | O_NOFOLLOW)` relative to the one before,
the file last with `O_NOFOLLOW | O_NONBLOCK`. Nothing is checked and then opened by path, so swapping a
directory for a symlink mid-request cannot lead the reader out of the root: the swap is met by an open
that refuses to follow it.

Symlinks are resolved here, in the same walk (`readlinkat`): a relative target continues from the
directory that holds the link, an absolute one only when it names a place under the root, and `..`
pops a directory this walk opened itself — climbing above the root is refused. More than MAX_SYMLINKS
links in one path (a loop) is a 400, like every refusal. Only regular files are read (a FIFO or device
is refused rather than blocked on).

Hard links cannot be told apart from the file they link to, so a hard link inside the root to a file
outside it would pass every path check: files with more than one link (`st_nlink > 1`) are refused.
Keep linked notes as symlinks (followed while they stay under the root) or copies.

POSIX only (`dir_fd` support): Linux and macOS. A directory *moved* out of the root while the walk holds
it open is the one race left; it needs write access both inside and outside the root.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from core.errors import InvalidInputError, UnavailableError

MAX_BYTES_PER_CHAR = 4  # UTF-8 encodes a character in at most 4 bytes
MAX_SYMLINKS = 40  # symlinks followed in one path: Linux's own limit (MAXSYMLINKS, fs/namei.c)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC
# What an open with O_NOFOLLOW (and O_DIRECTORY) answers when the name is a symlink, or not a directory.
_MAYBE_SYMLINK = frozenset({errno.ELOOP, errno.ENOTDIR, errno.EMLINK})


def _refuse(path: str, reason: str) -> InvalidInputError:
    return InvalidInputError(f"explicit link '{path[:200]}' refused: {reason}", {"explicit_links": reason})


class _Walk:
    """One resolution beneath the root: a stack of directory descriptors this walk opened itself."""

    def __init__(self, path: str, root_fd: int, root_names: tuple[PurePosixPath, ...]) -> None:
        self.path = path
        self.stack = [root_fd]
        self.root_names = root_names
        self.follows = 0

    def close(self) -> None:
        for fd in self.stack:
            os.close(fd)
        self.stack = []

    def _up(self) -> None:
        if len(self.stack) == 1:
            raise _refuse(self.path, "resolves outside the links root")
        os.close(self.stack.pop())

    def _splice(self, target: str, rest: list[str]) -> list[str]:
        """The components still to walk after meeting a symlink to `target`."""
        self.follows += 1
        if self.follows > MAX_SYMLINKS:
            raise _refuse(self.path, f"has a symlink loop (more than {MAX_SYMLINKS} symlinks)")
        link = PurePosixPath(target)
        if link.is_absolute():
            inside = next((link.relative_to(r) for r in self.root_names if link.is_relative_to(r)), None)
            if inside is None:
                raise _refuse(self.path, "resolves outside the links root")
            while len(self.stack) > 1:
                os.close(self.stack.pop())
            link = inside
        return [*link.parts, *rest]

    def _open(self, name: str, last: bool) -> int | None:
        """The descriptor of `name` in the current directory; None when it is a symlink or missing."""
        try:
            return os.open(name, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=self.stack[-1])
        except FileNotFoundError:
            raise
        except OSError as exc:
            if exc.errno in _MAYBE_SYMLINK:
                return None
            raise _refuse(self.path, f"cannot be opened ({exc.strerror})") from exc

    def resolve(self, parts: list[str]) -> int | None:
        """The open file at `parts` beneath the root; None when something on the way does not exist."""
        pending = list(parts)
        while pending:
            name, pending = pending[0], pending[1:]
            if name in ("", "."):
                continue
            if name == "..":
                self._up()
                continue
            try:
                fd = self._open(name, last=not pending)
                if fd is None:
                    pending = self._splice(os.readlink(name, dir_fd=self.stack[-1]), pending)
                    continue
            except FileNotFoundError:
                return None
            except OSError as exc:  # readlink: not a symlink after all (a file where a directory is due)
                if exc.errno == errno.EINVAL:
                    raise _refuse(self.path, "a part of the path is not a directory") from exc
                raise _refuse(self.path, f"cannot be opened ({exc.strerror})") from exc
            if not pending:
                return fd
            self.stack.append(fd)
        raise _refuse(self.path, "is not a regular file")  # the path named a directory


class FileLinkReader:
    """Reads text files under `root`; nothing outside it, whatever the path or its symlinks say."""

    def __init__(self, root: str | Path) -> None:
        self._root = Path(root)

    def _root_fd(self) -> tuple[int, tuple[PurePosixPath, ...]]:
        try:
            fd = os.open(self._root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
        except OSError as exc:
            raise UnavailableError("links", f"links root {self._root} is not readable: {exc}") from exc
        names = {PurePosixPath(os.path.abspath(self._root)), PurePosixPath(os.path.realpath(self._root))}
        return fd, tuple(names)

    def read(self, path: str, max_chars: int) -> str | None:
        """At most `max_chars` characters of the file at `path` under the root; None when it does not exist."""
        if not path or "\x00" in path:
            raise _refuse(path, "is not a usable path")
        if PurePosixPath(path).is_absolute() or Path(path).is_absolute() or Path(path).drive:
            raise _refuse(path, "absolute paths are refused; give a path relative to the links root")
        walk = _Walk(path, *self._root_fd())
        try:
            fd = walk.resolve(path.replace("\\", "/").split("/"))
        finally:
            walk.close()
        if fd is None:
            return None
        info = os.fstat(fd)
        refusal = None
        if not stat.S_ISREG(info.st_mode):
            refusal = "is not a regular file"
        elif info.st_nlink > 1:
            refusal = "has other hard links; only files with a single link are read"
        if refusal is not None:
            os.close(fd)
            raise _refuse(path, refusal)
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max(0, max_chars) * MAX_BYTES_PER_CHAR)
        return data.decode("utf-8", errors="replace")[:max_chars]
