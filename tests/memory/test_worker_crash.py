"""A real `manage.py db_worker` process killed in the middle of an auto-save: after a
new worker recovers the task, every exchange is in memory exactly once.

Everything is real and out of this test's process: the app's file database, the worker
process, the ikario_rag it reaches over HTTP on an index of this test's, SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.fixtures.manage_py import manage
from tests.fixtures.memory_server import HttpServer

ROOT = Path(__file__).resolve().parents[2]
EXCHANGES = 96  # 6 add_thoughts batches (backup.BATCH_ITEMS = 16): gaps to catch the worker in
CATCH_WAIT = 300.0  # seconds: the worker loads torch and the model first on a busy machine

SET_UP = """
import json
from django.contrib.auth import get_user_model
from memory.learning.conversations import save_conversation
from tests.fixtures.builders import make_conversation
user = get_user_model().objects.create_user("carol", password="x")
said = []
for i in range(%(n)d):
    said.append(f"Question {i}: " + "what about the glacier walk " * 40)
    said.append(f"Answer {i}: " + "bring crampons " * 60)
chat = make_conversation(user, "Glaciers", *said)
save_conversation.enqueue(chat.pk)
print(json.dumps({"conversation": chat.pk}))
"""

COUNT = """
import json
from django.contrib.auth import get_user_model
from memory.client import services
user = get_user_model().objects.get(username="carol")
services.wait_until_ready(180)
print(json.dumps([m["metadata"]["source"] for m in
    services.get_recent_memories(user=user, limit=100, kinds=["conversation"])["memories"]]))
"""


@pytest.fixture
def app_env():
    work = Path(tempfile.mkdtemp(prefix="ikario-crash-"))
    memory = HttpServer(work / "index")
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        "MCP_IKARIO_SERVER_URL": memory.url,
        "IKARIO_TOKEN": memory.token,
        "MCP_MEMORY_ENABLED": "true",
        "ANTHROPIC_API_KEY": "",
        "TASKS_RUNNING_TIMEOUT": "600",
        "PYTHONUNBUFFERED": "1",
    }
    env["DB"] = str(work / "db.sqlite3")
    yield env
    memory.stop()


def _progress(db: str) -> tuple[str, int]:
    with sqlite3.connect(db, timeout=30) as connection:
        status = connection.execute(
            "SELECT status FROM django_tasks_database_dbtaskresult"
        ).fetchone()
        saved = connection.execute("SELECT COUNT(*) FROM memory_saved_exchanges").fetchone()
    return (status[0] if status else ""), saved[0]


def test_it_saves_each_exchange_once_after_the_worker_is_killed_mid_task(app_env):
    manage(app_env, "migrate", "--noinput", timeout=CATCH_WAIT)
    out = manage(app_env, "shell", "-c", SET_UP % {"n": EXCHANGES}, timeout=CATCH_WAIT)
    conversation = json.loads(out.strip().splitlines()[-1])["conversation"]
    log = Path(app_env["DB"]).with_name("worker.log")
    first = subprocess.Popen(
        [
            sys.executable,
            "manage.py",
            "db_worker",
            "--no-startup-delay",
            "--interval",
            "0.1",
            "--no-reload",
        ],
        cwd=ROOT,
        env=app_env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + CATCH_WAIT
    status, saved = "", 0
    while time.monotonic() < deadline and not (status == "RUNNING" and saved > 0):
        assert first.poll() is None, log.read_text()[-3000:]
        time.sleep(0.01)
        status, saved = _progress(app_env["DB"])
    first.send_signal(signal.SIGKILL)
    first.wait()
    status, saved = _progress(app_env["DB"])
    assert status == "RUNNING" and 0 < saved < EXCHANGES, (
        f"the worker was not caught mid-task ({status}, {saved} saved)"
    )
    manage(app_env, "db_worker", "--batch", "--no-startup-delay", "--no-reload", timeout=CATCH_WAIT)

    status, saved = _progress(app_env["DB"])
    assert (status, saved) == ("SUCCESSFUL", EXCHANGES)
    counted = manage(app_env, "shell", "-c", COUNT, timeout=CATCH_WAIT)
    sources = json.loads(counted.strip().splitlines()[-1])
    per_exchange = Counter(sources)
    assert len(per_exchange) == EXCHANGES
    assert set(per_exchange.values()) == {1}
    assert all(s.startswith(f"conversation:{conversation}:") for s in per_exchange)
