"""Django's SQLite backend with the database kept private, whatever process opens it.

The database holds every session, password hash and chat: a local user who can read it can
log in as anyone (a session key is a cookie). So before SQLite opens it, a missing database
file is created empty with mode 0600, and an existing one, with its -wal and -shm files,
loses any group and other permission; so does a folder holding nothing but them (the
database's own folder, not a checkout). SQLite gives the -wal and -shm files it creates the
database's own mode. `manage.py migrate`, Daphne and the worker all open it through here
(settings.py names this backend). A missing folder is left missing: the database is away
(moved, unmounted), and SQLite's error says so (core/errors.py answers 503).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from django.db.backends.sqlite3 import base

SIDE_FILES = ("-wal", "-shm", "-journal")


def _tighten(path: Path, private: int) -> None:
    """Take group and other permissions off `path` if this user owns it (else chmod fails)."""
    with contextlib.suppress(FileNotFoundError):
        found = os.stat(path)
        if found.st_mode & 0o077 and found.st_uid == os.getuid():
            os.chmod(path, found.st_mode & private)


def make_private(database: Path) -> None:
    """Create `database` readable by this user only, or tighten it and what belongs to it."""
    if not database.parent.is_dir():
        return
    with contextlib.suppress(FileExistsError):
        os.close(os.open(database, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    own = {database.name, *(database.name + side for side in SIDE_FILES)}
    for path in (database, *(database.with_name(name) for name in own - {database.name})):
        _tighten(path, 0o700)
    with contextlib.suppress(OSError):
        if set(os.listdir(database.parent)) <= own:
            _tighten(database.parent, 0o700)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_new_connection(self, conn_params):
        name = conn_params["database"]
        # An in-memory database (the test suite's) or a file: URI has no plain path to keep.
        on_disk = not self.is_in_memory_db() and not str(name).startswith("file:")
        if on_disk:
            make_private(Path(name))
        connection = super().get_new_connection(conn_params)
        if on_disk:
            make_private(Path(name))  # the -wal and -shm the WAL pragma just opened
        return connection
