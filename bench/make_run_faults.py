"""`make run`'s processes under faults: the Procfile's three processes under honcho, as `make
run` starts them, on a fresh database and index in a temporary directory. Each of the memory
server, the worker and Daphne is killed (SIGKILL), then the app's database is locked past its
timeout and its folder moved away: what the web app answered meanwhile, whether the killed
process was started again (and in how long), and whether the worker ran a job queued after.

    .venv/bin/python bench/make_run_faults.py [--lock-seconds 25]
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.net import _family, free_port  # noqa: E402

WAIT = 300.0


def _until(check, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > WAIT:
            raise SystemExit(f"gave up waiting for {what}")
        time.sleep(0.1)
    return time.monotonic() - started


def _status(url: str) -> str:
    try:
        return str(httpx.get(url, timeout=5).status_code)
    except httpx.HTTPError as exc:
        return type(exc).__name__


def _running(honcho: int, word: bytes) -> list[int]:
    """The Python processes under honcho running `word`, not the restart wrapper."""
    found = []
    for pid in _family(honcho) - {honcho}:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        program = os.path.basename(command[0])
        wrapped = b"ikario_clone.restart" in command
        if word in command and not wrapped and (b"python" in program or program == b"daphne"):
            found.append(pid)
    return found


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lock-seconds", type=float, default=25.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ikario-make-run-"))
    (work / "data").mkdir()
    database = work / "data" / "db.sqlite3"
    web, memory = free_port(), free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": f"sqlite:///{database}",
        "IKARIO_INDEX_DIR": str(work / "index"),
        "MCP_IKARIO_SERVER_URL": f"http://127.0.0.1:{memory}/mcp",
        "IKARIO_TOKEN": secrets.token_urlsafe(24),
        "WEB_PORT": str(web),
        "IKARIO_PORT": str(memory),
        "ANTHROPIC_API_KEY": "",
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "PYTHONUNBUFFERED": "1",
    }

    def manage(*command: str) -> str:
        return subprocess.run(
            [sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip

    manage("migrate", "--noinput")
    log = work / "honcho.log"
    honcho = subprocess.Popen(
        [str(Path(sys.executable).with_name("honcho")), "start", "-f", str(ROOT / "Procfile")]
        + ["-e", os.devnull],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    page = f"http://127.0.0.1:{web}/accounts/login/"
    rows = []
    try:
        _until(lambda: _status(page) == "200", "the web app")
        _until(lambda: len(_running(honcho.pid, b"ikario_rag")) == 1, "the memory server")
        for name, word in (("memory server", b"ikario_rag"), ("worker", b"db_worker")):
            (pid,) = _running(honcho.pid, word)
            os.kill(pid, signal.SIGKILL)
            meanwhile = _status(page)
            back = _until(lambda w=word, p=pid: _running(honcho.pid, w) not in ([], [p]), name)
            rows.append((f"{name} killed", meanwhile, f"started again in {back:.1f} s"))
        (daphne,) = _running(honcho.pid, b"ikario_clone.asgi:application")
        os.kill(daphne, signal.SIGKILL)
        back = _until(lambda: _status(page) == "200", "Daphne")
        rows.append(("Daphne killed", "ConnectError", f"answering again in {back:.1f} s"))

        done = work / "done.txt"
        enqueue = (
            "from tests.memory.tasks_for_tests import note_run\n"
            f"note_run.enqueue({str(done)!r}, %r)\n"
        )
        holder = sqlite3.connect(database, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        time.sleep(args.lock_seconds)  # the fault's length, not a synchronisation
        meanwhile = _status(page)
        holder.rollback()
        holder.close()
        manage("shell", "-c", enqueue % "after-lock")
        ran = _until(lambda: done.exists() and "after-lock" in done.read_text(), "the job")
        rows.append((f"database locked {args.lock_seconds:.0f} s", meanwhile,
                     f"a job queued after ran in {ran:.1f} s"))  # fmt: skip

        (work / "data").rename(work / "data.away")
        time.sleep(10)  # the fault's length
        meanwhile = _status(page)
        (work / "data.away").rename(work / "data")
        manage("shell", "-c", enqueue % "after-move")
        ran = _until(lambda: "after-move" in done.read_text(), "the job")
        rows.append(("database folder moved away 10 s", meanwhile,
                     f"a job queued after ran in {ran:.1f} s"))  # fmt: skip
        alive = honcho.poll() is None
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        honcho.wait(60)
    said = log.read_text()
    print("| fault | the login page meanwhile | once over |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"\nhoncho still running at the end: {alive}; restarts said: {said.count('restart: ')}; "
          f"worker database waits logged: {said.count('database unavailable')}; "
          f"tracebacks: {said.count('Traceback')}")  # fmt: skip


if __name__ == "__main__":
    main()
