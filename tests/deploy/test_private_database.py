"""The app's SQLite database is readable by its user only, whatever starts it: it holds every
session (a session key is a login) and chat. `make run`'s own migrate line, a plain
`manage.py migrate` with the default umask, and a database made 0644 before are checked on a
temporary database."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _environment(database: Path) -> dict[str, str]:
    return {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
    }


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _run_with_umask_022(database: Path, *args: str) -> None:
    """manage.py as a user's shell would start it: files 0644 unless the app says otherwise."""
    subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=_environment(database),
        preexec_fn=lambda: os.umask(0o022),
        check=True,
        capture_output=True,
        timeout=120,
    )


def test_make_run_creates_the_database_private(tmp_path):
    recipe = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    (migrate,) = [line for line in recipe if "manage.py migrate" in line]
    database = tmp_path / "db.sqlite3"
    subprocess.run(["sh", "-c", migrate], cwd=ROOT, env=_environment(database), check=True)

    assert _mode(database) == 0o600


def test_a_plain_migrate_creates_the_database_and_its_folder_private(tmp_path):
    folder = tmp_path / "state"  # the database's own folder, as an operator makes it
    folder.mkdir(mode=0o755)
    database = folder / "db.sqlite3"

    _run_with_umask_022(database, "migrate", "--noinput")

    assert _mode(database) == 0o600
    assert _mode(folder) == 0o700
    # SQLite made the write-ahead log beside it; whatever is left of it is private too.
    for side in ("-wal", "-shm"):
        left = Path(f"{database}{side}")
        if left.exists():
            assert _mode(left) == 0o600, side


def test_a_folder_holding_other_files_keeps_its_mode(tmp_path):
    (tmp_path / "README.md").write_text("a checkout")
    tmp_path.chmod(0o755)

    _run_with_umask_022(tmp_path / "db.sqlite3", "migrate", "--noinput")

    assert _mode(tmp_path / "db.sqlite3") == 0o600
    assert _mode(tmp_path) == 0o755


def test_a_database_made_readable_before_is_tightened_at_start(tmp_path):
    database = tmp_path / "db.sqlite3"
    _run_with_umask_022(database, "migrate", "--noinput")
    # Another process has it open: its write-ahead log and shared memory stay beside it.
    holder = sqlite3.connect(database)
    holder.execute("PRAGMA journal_mode=WAL")
    holder.execute("SELECT count(*) FROM django_session").fetchone()
    side_files = [Path(f"{database}{side}") for side in ("-wal", "-shm")]
    for path in (database, *side_files):
        os.chmod(path, 0o644)

    try:
        # Any command that opens the database: here one an operator runs to look at it.
        _run_with_umask_022(database, "showmigrations", "chat")

        assert _mode(database) == 0o600
        assert [_mode(path) for path in side_files] == [0o600, 0o600]
    finally:
        holder.close()  # the last connection: SQLite removes the side files
