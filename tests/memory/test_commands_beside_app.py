"""Management commands beside the running app: `manage.py memory_search`, `memory_stats`
and a production `db_worker`, each a process of its own, reach the one memory server the
app uses as the app does, by its URL with the bearer token (the environment `make run`
writes into .env), and no second server is started.

This test's process plays the app: its client holds the shared ikario_rag over HTTP.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.deploy.conftest import documented_production_env
from tests.deploy.conftest import manage as _manage

SET_UP = """
import json
from django.contrib.auth import get_user_model
from memory.learning.conversations import save_conversation
from tests.fixtures.builders import make_conversation
user = get_user_model().objects.create_user("dora", password="x")
said = []
for i in range(6):
    said += [f"Which river for day {i}?", f"Day {i}: the Ardeche gorges by kayak."]
chat = make_conversation(user, "Kayak trip", *said)
save_conversation.enqueue(chat.pk)
print(json.dumps({"user": user.pk, "conversation": chat.pk}))
"""


def _ok(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    return done.stdout


@pytest.fixture
def beside_the_app(memory_server):
    """The environment of another process beside the app: its own database (migrated), the
    app's memory server URL and token; and its user, who owns a conversation with a
    queued auto-save."""
    work = Path(tempfile.mkdtemp(prefix="ikario-beside-"))
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{work / 'db.sqlite3'}",
        **memory_server.env(),
        "ANTHROPIC_API_KEY": "",
        "PYTHONUNBUFFERED": "1",
    }
    _ok(_manage(env, "migrate", "--noinput"))
    made = json.loads(_ok(_manage(env, "shell", "-c", SET_UP)).strip().splitlines()[-1])
    user = SimpleNamespace(pk=made["user"])
    yield SimpleNamespace(env=env, user=user, conversation=made["conversation"])
    memory_server.wipe(user)  # not a user of this test's database: the fixture would miss it


def test_it_searches_and_counts_through_the_apps_server(memory_server, beside_the_app):
    namespace = f"user-{beside_the_app.user.pk}"
    saved = memory_server.client.call_tool(
        "add_thought", {"content": "Dora paddles a red sea kayak", "namespace": namespace}
    )
    (app_server,) = memory_server.server_pids()

    found = _manage(beside_the_app.env, "memory_search", "red kayak", "--user", "dora")
    stats = _manage(beside_the_app.env, "memory_stats", "--json")
    users_stats = _manage(beside_the_app.env, "memory_stats", "--user", "dora")

    assert "Dora paddles a red sea kayak" in _ok(found) and saved["id"] in found.stdout
    overall = json.loads(_ok(stats))
    assert overall["status"] == "connected"
    assert overall["total_memories"] >= 1
    assert overall["health"]["status"] == "ok"
    assert "total_memories: 1" in _ok(users_stats)
    for done in (found, stats, users_stats):
        assert "already in use" not in done.stderr and "ExceptionGroup" not in done.stderr
    # No second server was started: the app's is the one that answered.
    assert memory_server.server_pids() == [app_server]


def test_it_runs_a_production_worker_on_the_apps_server(memory_server, beside_the_app):
    env = {
        **beside_the_app.env,
        **documented_production_env(),
        "DATABASE_URL": beside_the_app.env["DATABASE_URL"],
    }
    (app_server,) = memory_server.server_pids()

    worked = _manage(env, "db_worker", "--batch", "--no-startup-delay", "--no-reload")

    _ok(worked)
    namespace = f"user-{beside_the_app.user.pk}"
    memories = memory_server.client.call_tool(
        "get_recent_memories", {"limit": 20, "kinds": ["conversation"], "namespace": namespace}
    )["memories"]
    sources = {m["metadata"]["source"].rsplit(":", 1)[0] for m in memories}
    assert len(memories) == 6
    assert sources == {f"conversation:{beside_the_app.conversation}"}
    assert memory_server.server_pids() == [app_server]
