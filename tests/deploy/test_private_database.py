"""`make run` creates the app's SQLite database readable by its user only: it holds every
session and chat. The recipe's own migrate line is run here on a temporary database."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_make_run_creates_the_database_private(tmp_path):
    recipe = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    (migrate,) = [line for line in recipe if "manage.py migrate" in line]
    database = tmp_path / "db.sqlite3"
    environment = {
        **os.environ,
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{database}",
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
    }
    subprocess.run(["sh", "-c", migrate], cwd=ROOT, env=environment, check=True)

    assert stat.S_IMODE(database.stat().st_mode) == 0o600
    assert any(line.startswith("umask 077 && ") and "honcho start" in line for line in recipe)
