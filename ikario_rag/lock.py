"""An exclusive OS lock on the index directory: two servers on one index would corrupt it.

The lock file holds the holder's PID and, on a second line, the Unix socket it serves its
tools on: a second server is told where to reach the first instead of starting.
The socket's default path lives here too: the command line needs it before taking the lock,
before anything heavy is imported (ikario_rag.client, which exports it, imports the MCP SDK).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

SOCKET_NAME = "ikario_rag.sock"
# Its first line is the holding server's PID, its second the socket it serves.
LOCK_NAME = "server.lock"


def socket_path(index_dir: str | os.PathLike[str]) -> Path:
    """Where the server holding `index_dir` serves its tools (unless started --no-socket)."""
    return Path(index_dir).resolve() / SOCKET_NAME


def make_private(directory: Path) -> None:
    """Create `directory` readable by this user only (0700), and take group and other
    permissions off it and everything in it that has some (an index made before): it holds
    every user's memories, and the Unix socket that serves them without a token."""
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

    def acquire(self, socket: Path | None = None) -> IndexLock:
        make_private(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 4096).decode(errors="replace").splitlines()
            os.close(fd)
            pid = holder[0].strip() if holder and holder[0].strip() else "another process"
            where = (
                f"; reach it on its Unix socket {holder[1].strip()}"
                " (ikario_rag.client.open_session)"
                if len(holder) > 1 and holder[1].strip()
                else ""
            )
            raise IndexLocked(
                f"index directory {self.path.parent} is already in use by pid {pid}{where}; "
                "only one ikario_rag server may use an index directory"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{socket or ''}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def holder_pid(index_dir: Path) -> int | None:
    """The PID written in `index_dir`'s lock file, or None. Not proof of a live server: the
    file outlives a dead one, and its PID may have been reused since. (Probing the lock
    itself would make a server starting at that instant find it taken.)"""
    try:
        first = (Path(index_dir) / LOCK_NAME).read_text(errors="replace").partition("\n")[0]
    except OSError:
        return None
    first = first.strip()
    return int(first) if first.isdigit() else None
