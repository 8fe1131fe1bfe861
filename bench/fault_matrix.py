"""The fault matrix: each fault done to the real running app, what the user sees, what was lost.

    .venv/bin/python bench/fault_matrix.py [--only NAME ...] [--keep]

Everything is real: Daphne serving the app (`make run`'s command, DEBUG=true, the offline
responder: no API key), with the memory server and the worker it starts as its children, on a
fresh SQLite database, index and model cache in a temporary directory. A user (alice) saves
memories through the JSON API, as the memory page does; "what the user sees" is the header
indicator (its tooltip and message, /memory/indicator) and the answer to a save during the
fault; "lost" counts the saves the app acknowledged (201) that are not in memory once the
fault is over (and the chat messages sent, for Daphne killed).

Faults: the memory server killed (SIGKILL), the worker killed, Daphne killed, the index
directory removed, the memory database damaged (while the app is stopped), the disk full (the
index on a 64 MB tmpfs filled to the last byte: needs root to mount; skipped otherwise), the
model export removed, and damaged (truncated). A markdown table is printed at the end
(docs/FAULTS.md has the latest).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx2

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.net import free_port, wait_for_port  # noqa: E402

WAIT = 900.0  # a bound on the app's own work (torch, an export on a busy machine)
PASSWORD = "fault-matrix-pw"  # noqa: S105


@dataclass
class Row:
    fault: str
    during: str = ""  # what the user sees while it lasts
    save: str = ""  # the answer to a save meanwhile
    after: str = ""  # what the user sees once it is over
    lost: str = ""
    notes: list[str] = field(default_factory=list)


class App:
    """Daphne on a free port with this run's environment; its children are the memory
    server and the worker."""

    def __init__(self, work: Path, index: Path) -> None:
        self.work = work
        self.index = index
        self.process: subprocess.Popen | None = None
        self.port = 0
        self.http: httpx2.Client | None = None
        self.log = work / "daphne.log"

    def env(self) -> dict[str, str]:
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "MCP_"))},
            "DEBUG": "true",
            "DATABASE_URL": f"sqlite:///{self.work / 'db.sqlite3'}",
            "IKARIO_INDEX_DIR": str(self.index),
            "IKARIO_MODEL_CACHE": str(self.work / "cache"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
            "MCP_CONNECT_TIMEOUT": "60",
            "PYTHONPATH": str(ROOT),
        }

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env(),
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout

    def start(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(self.port)]
            + ["ikario_clone.asgi:application"],
            cwd=ROOT,
            env=self.env(),
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("a"),
            start_new_session=True,
        )
        wait_for_port(self.port, timeout=WAIT, process=self.process)
        self.login()

    def login(self) -> None:
        self.http = httpx2.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=60)
        self.http.get("/accounts/login/")
        token = self.http.cookies.get("csrftoken")
        self.http.post(
            "/accounts/login/",
            data={"username": "alice", "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"http://127.0.0.1:{self.port}/accounts/login/"},
        )

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(WAIT)
        self.process = None

    def children(self) -> dict[str, int]:
        """{"server": pid, "worker": pid} of Daphne's live children."""
        found = {}
        if self.process is None:
            return found
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, ValueError, IndexError):
                continue
            if ppid != self.process.pid:
                continue
            if "ikario_rag" in command:
                found["server"] = int(entry.name)
            elif "db_worker" in command:
                found["worker"] = int(entry.name)
        return found

    # -- what alice does and sees ----------------------------------------------------------

    def _csrf(self) -> dict[str, str]:
        return {"X-CSRFToken": self.http.cookies.get("csrftoken") or ""}

    def save(self, content: str) -> tuple[int, str]:
        answer = self.http.post("/api/memory/add", json={"content": content}, headers=self._csrf())
        if answer.status_code in (200, 201):
            return answer.status_code, "saved"
        try:
            said = answer.json().get("error") or answer.text
        except ValueError:
            said = answer.text
        return answer.status_code, str(said)[:160]

    def stats(self) -> dict:
        return self.http.get("/api/memory/stats").json()

    def indicator(self) -> str:
        """The indicator as read: its tooltip, and its message if any."""
        page = self.http.get("/memory/indicator").text
        tooltip = re.search(r'<summary title="([^"]*)"', page)
        message = re.search(r'class="memory-error small">([^<]*)<', page)
        parts = [html.unescape(tooltip.group(1)) if tooltip else "?"]
        if message and message.group(1).strip():
            parts.append(html.unescape(message.group(1).strip()))
        return " / ".join(parts)

    def contents(self) -> set[str]:
        answer = self.http.get("/api/memory/recent", params={"limit": 100})
        return {m["content"] for m in answer.json().get("memories", [])}

    def wait_status(self, *wanted: str, timeout: float = WAIT) -> str:
        deadline = time.monotonic() + timeout
        while True:
            status = self.stats().get("status", "")
            if status in wanted or time.monotonic() > deadline:
                return status
            time.sleep(1)


def saved(app: App, acknowledged: set[str], content: str) -> tuple[int, str]:
    code, said = app.save(content)
    if code in (200, 201):
        acknowledged.add(content)
    return code, said


def lost(app: App, acknowledged: set[str]) -> str:
    missing = acknowledged - app.contents()
    return "nothing" if not missing else f"{len(missing)} acknowledged saves"


def _answer(code: int, said: str) -> str:
    return f"{code} {said}"


def server_killed(app: App, acknowledged: set[str]) -> Row:
    row = Row("memory server killed (SIGKILL)")
    os.kill(app.children()["server"], signal.SIGKILL)
    row.save = _answer(*saved(app, acknowledged, "Saved just after the server was killed"))
    row.during = app.indicator()
    app.wait_status("connected")
    saved(app, acknowledged, "Saved once the server was back")
    row.after = app.indicator()
    row.lost = lost(app, acknowledged)
    return row


def worker_killed(app: App, acknowledged: set[str]) -> Row:
    row = Row("worker killed (SIGKILL)")
    before = app.children().get("worker")
    if before is None:
        row.notes.append("no worker child found")
        return row
    os.kill(before, signal.SIGKILL)
    row.during = app.indicator()
    row.save = _answer(*saved(app, acknowledged, "Saved while the worker was dead"))
    deadline = time.monotonic() + WAIT
    while app.children().get("worker") in (None, before) and time.monotonic() < deadline:
        time.sleep(0.5)
    row.after = app.indicator() + " (the app started a new worker)"
    row.lost = lost(app, acknowledged)
    row.notes.append("a job it was running is run again: tests/memory/test_worker_crash.py")
    return row


def daphne_killed(app: App, acknowledged: set[str]) -> Row:
    row = Row("Daphne killed (SIGKILL)")
    children = app.children()
    app.stop(signal.SIGKILL)
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{pid}").exists() for pid in children.values()):
        if time.monotonic() > deadline:
            row.notes.append("children outlived Daphne")
            break
        time.sleep(0.2)
    try:
        row.during = f"the page answers {app.http.get('/').status_code}"
    except httpx2.TransportError as exc:
        row.during = f"the page does not load ({type(exc).__name__})"
    try:
        row.save = _answer(*saved(app, acknowledged, "Saved while Daphne was dead"))
    except httpx2.TransportError as exc:
        row.save = f"no answer ({type(exc).__name__}): nothing acknowledged"
    app.start()
    app.wait_status("connected")
    row.after = app.indicator()
    row.lost = lost(app, acknowledged)
    return row


def index_removed(app: App, acknowledged: set[str]) -> Row:
    row = Row("index directory removed")
    shutil.rmtree(app.index)
    row.save = _answer(*saved(app, acknowledged, "Saved after the index was removed"))
    row.during = app.indicator()
    app.stop()
    # What it held went with it: what the fault is. The saves acknowledged before it are
    # not counted as lost by the app; those after it were refused, and said so.
    acknowledged.clear()
    app.start()
    app.wait_status("connected")
    saved(app, acknowledged, "Saved after a restart on a new index")
    row.after = app.indicator() + " (restarted: a new, empty index)"
    row.lost = "nothing acknowledged after the removal (the removed files' memories: the fault)"
    return row


def database_damaged(app: App, acknowledged: set[str]) -> Row:
    row = Row("memory database damaged (garbage over its first 8 KB, app stopped)")
    saved(app, acknowledged, "Saved before the damage")
    app.stop()
    database = app.index / "memories.sqlite3"
    with database.open("r+b") as damaged:
        damaged.write(os.urandom(8192))
    for extra in ("-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            Path(f"{database}{extra}").unlink()
    app.start()
    app.wait_status("connected", "disconnected", "saving_fails")
    row.during = app.indicator()
    row.save = _answer(*app.save("Saved with a damaged database"))
    row.after = "the same until the database is restored from a backup or reset (kept as is)"
    row.lost = "nothing acknowledged; the damaged file is left untouched"
    acknowledged.clear()
    app.stop()
    shutil.rmtree(app.index)  # the next faults start on a new index
    app.start()
    app.wait_status("connected")
    return row


def disk_full(app: App, acknowledged: set[str], work: Path) -> Row:
    row = Row("disk full (the index on a 64 MB tmpfs, filled)")
    mount = work / "small-disk"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True
    )
    if mounted.returncode != 0:
        row.notes.append("skipped: mounting a tmpfs needs root")
        return row
    app.stop()
    original = app.index
    app.index = mount / "index"
    try:
        app.start()
        app.wait_status("connected")
        mine: set[str] = set()
        saved(app, mine, "Saved before the disk filled")
        filler = mount / "filler"
        for chunk in (2**20, 4096, 1):  # to the last byte
            with contextlib.suppress(OSError), filler.open("ab", buffering=0) as f:
                while True:
                    f.write(b"\0" * chunk)
        row.save = _answer(*saved(app, mine, "A long memory to write. " * 400))
        row.during = app.indicator()
        filler.unlink()
        code, _ = saved(app, mine, "Saved once room was made")
        row.after = app.indicator() + ("" if code in (200, 201) else f" (save: {code})")
        row.lost = lost(app, mine)
    finally:
        app.stop()
        subprocess.run(["umount", str(mount)], check=False)
        app.index = original
        app.start()
        app.wait_status("connected")
    return row


def export_fault(app: App, acknowledged: set[str], damaged: bool) -> Row:
    row = Row("model export " + ("damaged (truncated to a third)" if damaged else "removed"))
    app.stop()
    cache = app.work / "cache"
    exported = [p for p in cache.glob("*.onnx") if ".int8-" not in p.name]
    for path in exported:
        if damaged:
            size = path.stat().st_size
            with path.open("r+b") as f:
                f.truncate(size // 3)
        else:
            path.unlink()
    started = time.monotonic()
    app.start()
    row.during = app.indicator()
    row.save = _answer(*saved(app, acknowledged, f"Saved while the export was {row.fault[13:]}"))
    status = app.wait_status("connected")
    took = time.monotonic() - started
    row.after = app.indicator() + f" (after {took:.0f} s)"
    saved(app, acknowledged, "Saved after the export was made again")
    row.lost = lost(app, acknowledged)
    starts = app.log.read_text().count("exporting it (once) in process")
    leftovers = list(cache.glob("*.onnx.tmp"))
    row.notes.append(f"status {status}; exports started {starts}; leftovers {len(leftovers)}")
    return row


FAULTS = {
    "server": server_killed,
    "worker": worker_killed,
    "daphne": daphne_killed,
    "index": index_removed,
    "database": database_damaged,
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="ikario-faults-"))
    # The model cache copied from this machine's: the export faults act on the copy.
    from ikario_rag import model

    (work / "cache").mkdir()
    for path in model.cache_dir().glob("*"):
        if path.is_file() and not path.name.endswith((".lock", ".tmp", ".log")):
            shutil.copy2(path, work / "cache" / path.name)
    app = App(work, work / "index")
    app.manage("migrate", "--noinput")
    app.manage(
        "shell",
        "-c",
        "from django.contrib.auth import get_user_model as g; "
        f"g().objects.create_user('alice', 'alice@example.com', '{PASSWORD}')",
    )
    rows: list[Row] = []
    wanted = args.only
    try:
        app.start()
        app.wait_status("connected")
        acknowledged: set[str] = set()
        for number in range(3):
            saved(app, acknowledged, f"Alice's memory number {number}")
        for name, fault in FAULTS.items():
            if wanted is None or name in wanted:
                rows.append(fault(app, acknowledged))
                print(rows[-1], flush=True)
        if wanted is None or "disk" in wanted:
            rows.append(disk_full(app, acknowledged, work))
            print(rows[-1], flush=True)
        for damaged, name in ((False, "export-removed"), (True, "export-damaged")):
            if wanted is None or name in wanted:
                rows.append(export_fault(app, acknowledged, damaged))
                print(rows[-1], flush=True)
    finally:
        app.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print()
    print("| fault | the indicator meanwhile | a save meanwhile | once over | lost |")
    print("|---|---|---|---|---|")
    for row in rows:
        notes = f" ({'; '.join(row.notes)})" if row.notes else ""
        print(f"| {row.fault}{notes} | {row.during} | {row.save} | {row.after} | {row.lost} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
