"""An exclusive OS lock on the index directory: two servers on one index would corrupt it."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path


class IndexLocked(RuntimeError):
    pass


class IndexLock:
    def __init__(self, index_dir: Path) -> None:
        self.path = Path(index_dir) / "server.lock"
        self._fd: int | None = None

    def acquire(self) -> IndexLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise IndexLocked(
                f"index directory {self.path.parent} is already in use by pid {holder}; "
                "only one ikario_rag server may use an index directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
