"""`FileLinkReader`: the LinkReader port over one root directory (QUARRY_LINKS_ROOT).

A path is refused — before anything is opened — when it is absolute, or when it resolves (symlinks
followed) outside the root. The final open uses O_NOFOLLOW and O_NONBLOCK and reads only regular files,
so a symlink swapped in after the check, a FIFO or a device is refused rather than followed or blocked on.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path, PurePosixPath

from core.errors import InvalidInputError, UnavailableError

MAX_BYTES_PER_CHAR = 4  # UTF-8 encodes a character in at most 4 bytes
_OPEN_FLAGS = (
    os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
)


def _refuse(path: str, reason: str) -> InvalidInputError:
    return InvalidInputError(f"explicit link '{path[:200]}' refused: {reason}", {"explicit_links": reason})


class FileLinkReader:
    """Reads text files under `root`; nothing outside it, whatever the path or its symlinks say."""

    def __init__(self, root: str | Path) -> None:
        self._root = Path(root)

    def _resolve(self, path: str) -> Path:
        if PurePosixPath(path).is_absolute() or Path(path).is_absolute() or Path(path).drive:
            raise _refuse(path, "absolute paths are refused; give a path relative to the links root")
        try:
            root = self._root.resolve(strict=True)
        except OSError as exc:
            raise UnavailableError("links", f"links root {self._root} is not readable: {exc}") from exc
        target = (root / path).resolve(strict=False)
        if target != root and not target.is_relative_to(root):
            raise _refuse(path, "resolves outside the links root")
        return target

    def read(self, path: str, max_chars: int) -> str | None:
        """At most `max_chars` characters of the file at `path` under the root; None when it does not exist."""
        target = self._resolve(path)
        try:
            fd = os.open(target, _OPEN_FLAGS)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _refuse(path, "is a symlink") from exc
            raise _refuse(path, f"cannot be opened ({exc.strerror})") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise _refuse(path, "is not a regular file")
        with os.fdopen(fd, "rb") as handle:
            data = handle.read(max(0, max_chars) * MAX_BYTES_PER_CHAR)
        return data.decode("utf-8", errors="replace")[:max_chars]
