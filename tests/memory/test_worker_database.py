"""The worker outlives a database it cannot use: a real `manage.py db_worker` process, its
SQLite file locked by another process past the lock timeout, then its folder moved away and
back. The worker waits, says so in one line, and runs the tasks queued after."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.fixtures.manage_py import manage

ROOT = Path(__file__).resolve().parents[2]
WAIT = 120.0  # seconds: bound on each step on a busy machine
AWAY = "database unavailable"

ENQUEUE = """
from tests.memory.tasks_for_tests import note_run
note_run.enqueue(%(path)r, %(name)r)
"""


@pytest.fixture
def worker_env():
    work = Path(tempfile.mkdtemp(prefix="ikario-worker-db-"))
    (work / "data").mkdir()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{work / 'data' / 'db.sqlite3'}",
        "MCP_MEMORY_ENABLED": "false",
        "ANTHROPIC_API_KEY": "",
        "DATABASE_LOCK_TIMEOUT": "0.5",
        "TASKS_DATABASE_RETRY": "0.2",
        "PYTHONUNBUFFERED": "1",
    }
    manage(env, "migrate", "--noinput")
    yield work, env


def _until(what: str, check, worker: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert worker.poll() is None, f"the worker exited: {log.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{what}: {log.read_text()[-3000:]}"
        time.sleep(0.05)


def _ran(done: Path, name: str):
    return lambda: done.exists() and name in done.read_text().split()


def test_the_worker_waits_out_a_locked_and_a_moved_database_then_runs_tasks(worker_env):
    work, env = worker_env
    done, log = work / "done.txt", work / "worker.log"
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload"]
        + ["--interval", "0.1"],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    try:
        manage(env, "shell", "-c", ENQUEUE % {"path": str(done), "name": "before"})
        _until("the first task ran", _ran(done, "before"), worker, log)

        # Another process holds the write lock well past the worker's lock timeout.
        holder = sqlite3.connect(work / "data" / "db.sqlite3", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        try:
            _until("the worker saw the lock", lambda: AWAY in log.read_text(), worker, log)
            said = log.read_text().count(AWAY)
            _until("it kept waiting", lambda: log.read_text().count(AWAY) > said, worker, log)
        finally:
            holder.rollback()
            holder.close()
        manage(env, "shell", "-c", ENQUEUE % {"path": str(done), "name": "after-lock"})
        _until("a task ran after the lock", _ran(done, "after-lock"), worker, log)

        # The database's folder moved away (a disk unmounted, an operator's mistake), and back.
        said = log.read_text().count(AWAY)
        (work / "data").rename(work / "data.away")
        try:
            _until("it saw it away", lambda: log.read_text().count(AWAY) > said, worker, log)
        finally:
            (work / "data.away").rename(work / "data")
        manage(env, "shell", "-c", ENQUEUE % {"path": str(done), "name": "after-move"})
        _until("a task ran after the move", _ran(done, "after-move"), worker, log)

        assert "Traceback" not in log.read_text()
    finally:
        worker.terminate()
        worker.wait(timeout=WAIT)
