"""An exclusive OS lock on the index directory: two servers on one index would corrupt it.

The lock file holds the holder's PID: a second server is told which process holds it.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

# Its first line is the holding server's PID.
LOCK_NAME = "server.lock"


def make_private(directory: Path) -> None:
    """Create `directory` readable by this user only (0700), and take group and other
    permissions off it and everything in it that has some (an index made before): it holds
    every user's memories."""
    directory = Path(directory)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    for path in (directory, *directory.rglob("*")):
        try:
            found = os.lstat(path)
            if found.st_mode & 0o077 and found.st_uid == os.getuid() and not path.is_symlink():
                os.chmod(path, found.st_mode & 0o700)
        except OSError:  # removed meanwhile (Chroma's temporary files)
            continue


class IndexLocked(RuntimeError):
    pass


class IndexLock:
    def __init__(self, index_dir: Path) -> None:
        self.path = Path(index_dir) / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> IndexLock:
        make_private(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode(errors="replace").splitlines()
            os.close(fd)
            pid = holder[0].strip() if holder and holder[0].strip() else "another process"
            raise IndexLocked(
                f"index directory {self.path.parent} is already in use by pid {pid}; "
                "only one ikario_rag server may use an index directory (share it over "
                "streamable HTTP: MCP_IKARIO_SERVER_URL)"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
