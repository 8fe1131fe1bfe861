"""`make run`: .env gets the memory server's URL and a token generated on this machine, and
the Procfile's three processes (web, worker, memory) run the app, each reaching the memory
server by its URL with the token, as a manage.py command beside them does; importing the
ASGI application starts nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from ikario_clone import local_env
from tests.deploy.conftest import ROOT, manage
from tests.net import _family, free_port

# Bound on the memory server's start on a busy machine (imports, the embedding model).
START_WAIT = 300.0


def test_make_run_gives_env_a_generated_token_once(tmp_path):
    first, second = tmp_path / "first.env", tmp_path / "second.env"
    for path in (first, second):
        path.write_text((ROOT / ".env.example").read_text() + "IKARIO_TOKEN=\n")

    assert local_env.ensure(first) == ["MCP_IKARIO_SERVER_URL", "IKARIO_TOKEN"]
    local_env.ensure(second)
    written = first.read_text()
    assert local_env.ensure(first) == []  # a second `make run` keeps it

    tokens = [line for line in written.splitlines() if line.startswith("IKARIO_TOKEN=")]
    assert len(tokens) == 1 and len(tokens[0]) > len("IKARIO_TOKEN=") + 40
    assert tokens[0] not in second.read_text()  # each checkout its own
    assert first.read_text() == written
    assert "MCP_IKARIO_SERVER_URL=http://127.0.0.1:8765/mcp" in written.splitlines()
    assert first.stat().st_mode & 0o077 == 0
    # The repository never carries one.
    example = (ROOT / ".env.example").read_text().splitlines()
    assert not [line for line in example if line.startswith("IKARIO_TOKEN=")]


def _make_run_steps() -> tuple[list[str], str]:
    """What `make run` does with the environment: the env writer's arguments, and the file
    honcho reads (`make -n`: the commands as make runs them, none run)."""
    shown = subprocess.run(
        ["make", "-n", "run"], cwd=ROOT, capture_output=True, text=True, timeout=60
    ).stdout
    writer = next(line for line in shown.splitlines() if "ikario_clone.local_env" in line)
    honcho = next(line for line in shown.splitlines() if "honcho start" in line).split()
    env_file = honcho[honcho.index("-e") + 1] if "-e" in honcho else ".env"
    return writer.split("ikario_clone.local_env", 1)[1].split(), env_file


def _as_started(checkout: Path, **shell: str) -> dict[str, str]:
    """The variables a process `make run` starts sees, with `shell` set in the shell."""
    args, env_file = _make_run_steps()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("IKARIO_", "MCP_", "WEB_"))}
    env |= {"PYTHONPATH": str(ROOT), **shell}
    writer = [sys.executable, "-m", "ikario_clone.local_env", *args]
    subprocess.run(writer, cwd=checkout, env=env, check=True, timeout=60)
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    honcho = [str(Path(sys.executable).with_name("honcho")), "run", "-e", env_file]
    seen = subprocess.run(
        [*honcho, sys.executable, "-c", code],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return json.loads(seen.stdout)


def test_ports_given_in_the_shell_win_over_env(tmp_path):
    (tmp_path / ".env").write_text((ROOT / ".env.example").read_text())

    chosen = _as_started(tmp_path, IKARIO_PORT="8102", WEB_PORT="8103")
    default = _as_started(tmp_path)

    assert (chosen["IKARIO_PORT"], chosen["WEB_PORT"]) == ("8102", "8103")
    assert chosen["MCP_IKARIO_SERVER_URL"] == "http://127.0.0.1:8102/mcp"
    assert default["IKARIO_PORT"] == "8765" and "WEB_PORT" not in default
    assert default["MCP_IKARIO_SERVER_URL"] == "http://127.0.0.1:8765/mcp"
    # The token reaches both, and .env itself is left as it was written (port 8765).
    written = (tmp_path / ".env").read_text().splitlines()
    (token,) = [line.split("=", 1)[1] for line in written if line.startswith("IKARIO_TOKEN=")]
    assert chosen["IKARIO_TOKEN"] == default["IKARIO_TOKEN"] == token
    assert "IKARIO_PORT=8765" in written
    # A port kept in .env: the URL written there follows it (manage.py commands read .env).
    (tmp_path / ".env").write_text(
        "\n".join(written).replace("IKARIO_PORT=8765", "IKARIO_PORT=8110")
    )
    kept = _as_started(tmp_path)
    assert (kept["IKARIO_PORT"], kept["MCP_IKARIO_SERVER_URL"]) == (
        "8110",
        "http://127.0.0.1:8110/mcp",
    )
    assert "MCP_IKARIO_SERVER_URL=http://127.0.0.1:8110/mcp" in (tmp_path / ".env").read_text()


def test_importing_the_asgi_application_starts_no_thread_and_no_process(tmp_path):
    code = (
        "import os, threading\n"
        "from pathlib import Path\n"
        "import ikario_clone.asgi\n"
        "me = str(os.getpid())\n"
        "children = [p.name for p in Path('/proc').iterdir() if p.name.isdigit()\n"
        "    and (p / 'stat').read_text().rsplit(')', 1)[1].split()[1] == me]\n"
        "print([t.name for t in threading.enumerate()], children)\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MCP_MEMORY_ENABLED": "true",
    }
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "['MainThread'] []"


def _wait(what, check, process, log: Path) -> None:
    deadline = time.monotonic() + START_WAIT
    while not check():
        assert process.poll() is None, f"honcho exited: {log.read_text()[-4000:]}"
        assert time.monotonic() < deadline, f"{what}: {log.read_text()[-4000:]}"
        time.sleep(0.5)


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def _niceness(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[16])


def _descendants_running(pid: int, word: bytes) -> list[int]:
    """Pids of `pid`'s Python descendants whose command line has `word` (not the shells
    that honcho runs them in, nor ikario_clone.restart around them)."""
    found = []
    for member in _family(pid) - {pid}:
        try:
            command = Path(f"/proc/{member}/cmdline").read_bytes().split(b"\0")
            restarter = b"ikario_clone.restart" in command  # the one that runs it
            if word in command and b"python" in os.path.basename(command[0]) and not restarter:
                found.append(member)
        except OSError:
            continue
    return found


def test_the_procfile_runs_the_app_its_worker_and_memory_server_reached_by_url(tmp_path):
    web, memory = free_port(), free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "IKARIO_INDEX_DIR": str(tmp_path / "index"),
        "MCP_MEMORY_ENABLED": "true",
        "MCP_IKARIO_SERVER_URL": f"http://127.0.0.1:{memory}/mcp",
        "IKARIO_TOKEN": "a-token-of-this-test",
        "WEB_PORT": str(web),
        "IKARIO_PORT": str(memory),
        "ANTHROPIC_API_KEY": "",
        "MEMORY_EXTRACTION": "false",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
    }
    assert manage(env, "migrate", "--noinput").returncode == 0
    log = tmp_path / "honcho.log"
    honcho = subprocess.Popen(
        [str(Path(sys.executable).with_name("honcho")), "start", "-f", str(ROOT / "Procfile")]
        + ["--no-prefix", "-e", os.devnull],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        login = f"http://127.0.0.1:{web}/accounts/login/"
        _wait("the web app", lambda: _answers(login), honcho, log)
        # A manage.py command beside them reaches the same memory server by its URL.
        stats: dict = {}

        def connected() -> bool:
            done = manage(env, "memory_stats", "--json")
            stats.update(json.loads(done.stdout) if done.returncode == 0 else {})
            return stats.get("status") == "connected"

        _wait("the memory server", connected, honcho, log)
        code = (
            "from django.contrib.auth import get_user_model\n"
            "from tests.memory.tasks_for_tests import rename_user\n"
            "user = get_user_model().objects.create_user('eve', password='x')\n"
            "rename_user.enqueue(user.pk, 'eve2')\n"
        )
        enqueued = manage(env, "shell", "-c", code)
        assert enqueued.returncode == 0, enqueued.stderr
        check = (
            "from django.contrib.auth import get_user_model\n"
            "print(get_user_model().objects.filter(username='eve2').exists())\n"
        )
        _wait(
            "the worker",
            lambda: manage(env, "shell", "-c", check).stdout.split()[-1:] == ["True"],
            honcho,
            log,
        )
        (worker,) = _descendants_running(honcho.pid, b"db_worker")
        assert _niceness(worker) >= min(_niceness(os.getpid()) + 10, 19)
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        try:
            honcho.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(honcho.pid, signal.SIGKILL)
            honcho.wait()
