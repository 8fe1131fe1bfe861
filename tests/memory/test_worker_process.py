"""The worker `make run` starts: the app (real Daphne importing ikario_clone/asgi.py, on its
own file SQLite database) runs `manage.py db_worker` as a child process at a lower CPU
priority, which runs what the app enqueues, is started again when it dies, stops with the
app however the app ends, and uses the app's memory server instead of starting its own.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ikario_rag.client import tell_foreground
from memory import mcp_client, worker_process
from memory.errors import MemoryUnavailable
from tests.fixtures.browser import ROOT, AppServer
from tests.fixtures.memory_server import _children_running

WAIT = 120.0  # seconds: Django's start-up in a new process on a busy 2-core machine
MODEL_WAIT = 300.0  # seconds: the app's memory server loads torch and the model first
NICE = 7

ENQUEUE = """
import json
from django.contrib.auth import get_user_model
from tests.memory.tasks_for_tests import rename_user
user, _ = get_user_model().objects.get_or_create(username=%(old)r)
result = rename_user.enqueue(user.pk, %(new)r)
print(json.dumps({"task": str(result.id)}))
"""


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _nice(pid: int) -> int:
    return int(_stat(pid)[16])  # field 19 of /proc/<pid>/stat


def _alive(pid: int) -> bool:
    try:
        return _stat(pid)[0] != "Z"
    except OSError:
        return False


def _children(pid: int, word: str) -> list[int]:
    """Live children of `pid` whose command line holds `word`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = _stat(int(entry.name))
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat[1]) == pid and stat[0] != "Z" and any(word.encode() in c for c in cmdline):
            found.append(int(entry.name))
    return found


def _until(check, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.1)
    pytest.fail(f"{what}: not within {timeout:g} s")


def _worker_of(app: AppServer) -> int:
    (pid,) = _until(lambda: _children(app.process.pid, "db_worker"), WAIT, "no worker process")
    return pid


def _run_task(app: AppServer, old: str, new: str) -> tuple[str, list[str]]:
    """Enqueue a task through manage.py (its own process, like a view) and wait for it:
    its status and the ids of the workers that claimed it."""
    out = app.manage("shell", "-c", ENQUEUE % {"old": old, "new": new})
    task = json.loads(out.strip().splitlines()[-1])["task"]

    def finished():
        with sqlite3.connect(app.dir / "db.sqlite3", timeout=30) as db:
            row = db.execute(
                "SELECT status, worker_ids FROM django_tasks_database_dbtaskresult WHERE id = ?",
                (task.replace("-", ""),),
            ).fetchone()
        return row if row and row[0] in ("SUCCESSFUL", "FAILED") else None

    status, worker_ids = _until(finished, WAIT, f"task {task} not run")
    return status, json.loads(worker_ids)


def _usernames(app: AppServer) -> set[str]:
    with sqlite3.connect(app.dir / "db.sqlite3", timeout=30) as db:
        return {name for (name,) in db.execute("SELECT username FROM auth_user")}


@pytest.fixture
def app():
    server = AppServer({"TASKS_WORKER_NICE": str(NICE), "TASKS_WORKER_INTERVAL": "0.2"})
    yield server.start()
    server.stop()


def test_it_runs_the_apps_tasks_in_a_child_process_at_a_lower_priority(app):
    worker = _worker_of(app)

    status, worker_ids = _run_task(app, "erin", "erin-renamed")

    assert status == "SUCCESSFUL"
    assert "erin-renamed" in _usernames(app)
    assert worker_ids[-1].split(":")[1] == str(worker)
    assert _nice(worker) == _nice(app.process.pid) + NICE


@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGKILL], ids=["stopped", "killed"])
def test_it_stops_the_worker_when_the_app_ends(app, how):
    worker = _worker_of(app)

    app.process.send_signal(how)
    app.process.wait(WAIT)

    _until(lambda: not _alive(worker), WAIT, f"worker {worker} outlived the app")


def test_it_starts_the_worker_again_when_it_dies(app):
    first = _worker_of(app)

    os.kill(first, signal.SIGKILL)
    second = _until(
        lambda: [p for p in _children(app.process.pid, "db_worker") if p != first],
        WAIT,
        "no new worker",
    )[0]
    status, worker_ids = _run_task(app, "frank", "frank-renamed")

    assert status == "SUCCESSFUL" and "frank-renamed" in _usernames(app)
    assert worker_ids[-1].split(":")[1] == str(second)
    assert "background worker process" in app.log.read_text()
    assert f"{first} exited" in app.log.read_text()


@pytest.mark.parametrize(
    "setting, said",
    [
        ({"TASKS_WORKER_MODE": "thread"}, None),
        # A worker process reaches the app's memory server through its Unix socket: with
        # none (IKARIO_SOCKET=off) it would fail every save, so the app runs the worker.
        ({"IKARIO_SOCKET": "off"}, "IKARIO_SOCKET=off"),
    ],
    ids=["asked", "no memory server socket"],
)
def test_it_runs_the_tasks_in_a_thread_of_the_app(setting, said):
    app = AppServer({**setting, "TASKS_WORKER_INTERVAL": "0.2"}).start()
    try:
        status, worker_ids = _run_task(app, "gina", "gina-renamed")

        assert status == "SUCCESSFUL" and "gina-renamed" in _usernames(app)
        assert worker_ids[-1].split(":")[1] == str(app.process.pid)
        assert _children(app.process.pid, "db_worker") == []
        assert said is None or said in app.log.read_text()
    finally:
        app.stop()


SAVE = """
import json
from django.contrib.auth import get_user_model
from memory.autosave import save_conversation
from tests.fixtures.builders import make_conversation
user = get_user_model().objects.create_user("hugo", password="x")
said = []
for i in range(6):
    said += [f"Which summit on day {i}?", f"Day {i}: the Grand Veymont from Gresse."]
chat = make_conversation(user, "Vercors", *said)
result = save_conversation.enqueue(chat.pk)
print(json.dumps({"task": str(result.id)}))
"""

SAVED = """
import json
from django.contrib.auth import get_user_model
from memory import services
user = get_user_model().objects.get(username="hugo")
print(json.dumps([m["metadata"]["source"] for m in
    services.get_recent_memories(user=user, limit=100, kinds=["conversation"])["memories"]]))
"""


def _finished(app: AppServer, task: str) -> str | None:
    """The status of the task of id `task` (hex, no dashes) once it has ended, else None."""
    with sqlite3.connect(app.dir / "db.sqlite3", timeout=30) as db:
        row = db.execute(
            "SELECT status FROM django_tasks_database_dbtaskresult WHERE id = ?", (task,)
        ).fetchone()
    return row[0] if row and row[0] in ("SUCCESSFUL", "FAILED") else None


def test_it_saves_through_the_apps_memory_server_and_starts_none(tmp_path):
    app = AppServer({"MCP_MEMORY_ENABLED": "true", "TASKS_WORKER_INTERVAL": "0.2"}).start()
    try:
        worker = _worker_of(app)
        out = app.manage("shell", "-c", SAVE)
        task = json.loads(out.strip().splitlines()[-1])["task"].replace("-", "")

        status = _until(lambda: _finished(app, task), MODEL_WAIT, "the save did not finish")
        sources = json.loads(app.manage("shell", "-c", SAVED).strip().splitlines()[-1])

        assert status == "SUCCESSFUL"
        assert len(sources) == 6
        assert len(_children(app.process.pid, "server.py")) == 1  # the app's own
        assert _children(worker, "server.py") == []
    finally:
        app.stop()


def test_it_gives_the_worker_the_apps_environment_without_starting_a_server(settings):
    command = worker_process.worker_command(parent_pid=4321)
    env = worker_process.worker_environment()

    assert command[1:3] == [str(settings.BASE_DIR / "manage.py"), "db_worker"]
    assert command[command.index("--parent-pid") + 1] == "4321"
    assert command[command.index("--nice") + 1] == str(settings.TASKS_WORKER_NICE)
    assert "--no-reload" in command
    assert env.pop("MCP_SPAWN_SERVER") == "false"
    assert {k: v for k, v in os.environ.items() if k != "MCP_SPAWN_SERVER"}.items() <= env.items()


def test_it_stops_a_worker_whose_app_is_already_gone(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }

    done = subprocess.run(
        [sys.executable, "manage.py", "db_worker", "--no-reload", "--parent-pid", str(gone.pid)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert "shutting down" in done.stderr


def test_it_waits_for_the_apps_memory_server_instead_of_starting_one(settings, tmp_path):
    settings.MCP_SPAWN_SERVER = False
    settings.MCP_CONNECT_TIMEOUT = 0.5
    target = mcp_client.ServerTarget(settings.MCP_IKARIO_SERVER_PATH, str(tmp_path / "index"))
    client = mcp_client.client_for(target)
    try:
        connected = client.wait_connected(timeout=5)

        assert not connected
        assert "MCP_SPAWN_SERVER is off" in client.last_error
        assert _children_running(settings.MCP_IKARIO_SERVER_PATH, target.index_dir) == []
        with pytest.raises(MemoryUnavailable):
            client.call_tool("get_recent_memories", {"namespace": "user-1"}, timeout=2)
    finally:
        client.close()


def test_it_waits_longer_before_each_restart_of_a_worker_that_keeps_dying(monkeypatch, caplog):
    monkeypatch.setattr(
        worker_process, "worker_command", lambda parent_pid: [sys.executable, "-c", "exit(3)"]
    )
    monkeypatch.setattr(worker_process, "FIRST_RESTART_DELAY", 0.05)
    supervisor = worker_process.WorkerProcess()
    caplog.set_level("ERROR", logger="memory.worker")

    supervisor.start()
    _until(lambda: supervisor.starts >= 4, WAIT, "the worker was not started again")
    supervisor.stop()
    supervisor.join(WAIT)

    deaths = [r.args for r in caplog.records if "exited" in r.getMessage()]
    assert [code for _, code, _, _ in deaths[:3]] == [3, 3, 3]
    assert [delay for _, _, _, delay in deaths[:3]] == [0.05, 0.1, 0.2]
    assert not supervisor.is_alive() and supervisor.process.poll() is not None


def _health(app: AppServer) -> dict:
    """The app's memory server's health, asked by `manage.py memory_stats`: a process of its
    own on the server's Unix socket that does not say it is background work."""
    return json.loads(app.manage("memory_stats", "--json")).get("health") or {}


def test_the_workers_saves_wait_unread_while_the_app_writes_a_reply_and_land_after(tmp_path):
    # A hold and a patience longer than the test: what waits, waits until it is released.
    app = AppServer(
        {
            "MCP_MEMORY_ENABLED": "true",
            "TASKS_WORKER_INTERVAL": "0.2",
            "IKARIO_SOCKET_PATIENCE": "3600",
            "IKARIO_FOREGROUND_HOLD": "3600",
        }
    ).start()
    index_dir = app.dir / "index"
    held = False
    try:
        _worker_of(app)
        _until(lambda: _health(app).get("status") == "ok", MODEL_WAIT, "no memory server")
        held = tell_foreground(index_dir, busy=True)  # a reply is being written
        out = app.manage("shell", "-c", SAVE)
        task = json.loads(out.strip().splitlines()[-1])["task"].replace("-", "")
        # The worker's call reached the server, which holds it unread, while another socket
        # client that is not background work (this command) is answered.
        waiting = _until(
            lambda: _health(app).get("socket_calls_waiting"), WAIT, "the save never arrived"
        )
        during = json.loads(app.manage("shell", "-c", SAVED).strip().splitlines()[-1])
        released = tell_foreground(index_dir, busy=False)
        held = False

        status = _until(lambda: _finished(app, task), MODEL_WAIT, "the save did not finish")
        after = json.loads(app.manage("shell", "-c", SAVED).strip().splitlines()[-1])
    finally:
        if held:
            tell_foreground(index_dir, busy=False)
        app.stop()

    assert waiting >= 1
    assert during == []
    assert released
    assert status == "SUCCESSFUL"
    assert len(after) == 6
