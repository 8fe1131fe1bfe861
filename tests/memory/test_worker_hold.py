"""A reply holds the background workers of this machine at once (memory/worker_hold.py): a
real `manage.py db_worker` process, in the middle of a long step that never looks at the
chat, stops when the app tells it and goes on when released; inside a database transaction
it finishes the transaction first and waits at its next look. The app never signals a
process that is not a listening worker.

A step's progress is a counter the task writes to a file every few milliseconds. "Stopped"
is a counter that no longer moves; each wait below ends on what the files say, within a
bound (a loaded machine's, not an expectation of speed).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chat.models import Message
from chat.signals import reply_writing
from memory import worker_hold
from tests.fixtures.manage_py import ROOT, manage

WAIT = 120.0  # seconds: Django's start-up in new processes on a busy 2-core machine
STILL = 0.5  # seconds a stopped counter is watched for, and must not move

ENQUEUE = """
from tests.memory.tasks_for_tests import count_until
count_until.enqueue(%(counter)r, %(stop)r, in_transaction=%(in_transaction)r)
"""


class WorkerBeside:
    """A migrated file database and a `manage.py db_worker` on it, as production runs one."""

    def __init__(self, work: Path):
        self.work = work
        self.db = work / "db.sqlite3"
        self.counter = work / "counter"
        self.stop = work / "stop"
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
            "DEBUG": "true",
            "DATABASE_URL": f"sqlite:///{self.db}",
            "MCP_MEMORY_ENABLED": "false",
            "IKARIO_INDEX_DIR": str(work / "index"),
            "TASKS_YIELD_TO_CHAT": "300",  # a hold lasts until released, in this test
            "LOG_LEVEL": "DEBUG",
        }
        self.process: subprocess.Popen | None = None

    def manage(self, *args: str) -> None:
        manage(self.env, *args, timeout=WAIT)

    def start(self) -> WorkerBeside:
        self.manage("migrate", "--noinput", "-v", "0")
        self.process = subprocess.Popen(
            [sys.executable, "manage.py", "db_worker", "--no-reload", "--interval", "0.1"],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=(self.work / "worker.log").open("w"),
        )
        return self

    def close(self) -> None:
        self.stop.touch()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    @property
    def directory(self) -> Path:
        """Where the app on this database looks for its workers."""
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(self.db)}
        return worker_hold.workers_dir(database)

    def tell(self, *, busy: bool) -> int:
        return worker_hold.tell_workers(busy=busy, directory=self.directory)

    def count(self) -> int:
        try:
            return int(self.counter.read_text() or 0)
        except (OSError, ValueError):
            return 0

    def run_counting(self, *, in_transaction: bool = False) -> None:
        """Enqueue the counting task; return once the worker is announced and counting."""
        self.manage(
            "shell",
            "-c",
            ENQUEUE
            % {
                "counter": str(self.counter),
                "stop": str(self.stop),
                "in_transaction": in_transaction,
            },
        )
        announced = self.directory / str(self.process.pid)
        until(lambda: announced.exists() and self.count() > 0, "the worker never started counting")

    def counts_on(self, past: int) -> bool:
        """Whether the counter moves on past `past` (waits for it, within the bound)."""
        return until(lambda: self.count() > past, "", fail=False)

    def stands_still(self) -> int:
        """The counter's value once it stopped moving for STILL seconds (fails if it never
        does within the bound)."""
        found: list[int] = []

        def still() -> bool:
            before = self.count()
            time.sleep(STILL)
            found[:] = [self.count()]
            return found[0] == before

        until(still, "the worker's step never stopped")
        return found[0]


def until(check, what: str, *, fail: bool = True) -> bool:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    if fail:
        pytest.fail(f"{what}: not within {WAIT:g} s")
    return False


@pytest.fixture
def worker(tmp_path):
    beside = WorkerBeside(tmp_path).start()
    yield beside
    beside.close()


def test_a_held_worker_stops_mid_step_and_goes_on_once_released(worker):
    worker.run_counting()

    assert worker.tell(busy=True) == 1
    held_at = worker.stands_still()
    time.sleep(STILL)
    still_held = worker.count()
    assert worker.tell(busy=False) == 1

    assert still_held == held_at
    assert worker.counts_on(held_at)


def test_a_held_worker_finishes_its_transaction_then_waits_at_its_next_look(worker):
    worker.run_counting(in_transaction=True)
    after = worker.counter.with_name("counter.after")

    assert worker.tell(busy=True) == 1
    # Inside the transaction it goes on: stopping there would keep SQLite's write lock
    # from the reply.
    assert worker.counts_on(worker.count() + 20)
    worker.stop.touch()  # the transaction ends; the task then looks at the chat
    worker.stands_still()
    time.sleep(STILL)
    waited = not after.exists()
    assert worker.tell(busy=False) == 1

    assert waited
    assert until(after.exists, "the task never went on after the release")


def test_it_signals_no_process_that_is_not_a_listening_worker(tmp_path):
    directory = tmp_path / "workers"
    directory.mkdir()
    # Not a worker; and a "db_worker" in name only, which catches neither signal: SIGUSR1
    # would end both.
    strangers = [
        subprocess.Popen(["sleep", "60"]),
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "db_worker"]),
    ]
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        for process in [*strangers, dead]:
            (directory / str(process.pid)).touch()
        (directory / "not-a-pid").touch()

        told = worker_hold.tell_workers(busy=True, directory=directory)

        assert told == 0
        assert [process.poll() for process in strangers] == [None, None]
        assert sorted(p.name for p in directory.iterdir()) == sorted(
            [str(strangers[0].pid), str(strangers[1].pid), "not-a-pid"]
        )
    finally:
        for process in strangers:
            process.kill()
            process.wait()


def test_the_app_tells_its_workers_of_replies_with_memory_off(settings, monkeypatch):
    told: list[bool] = []
    monkeypatch.setattr(worker_hold, "tell_workers", lambda *, busy: told.append(busy))
    settings.MCP_MEMORY_ENABLED = False

    reply_writing.send(sender=Message, writing=True)
    reply_writing.send(sender=Message, writing=False)
    settings.TASKS_YIELD_TO_CHAT = 0
    reply_writing.send(sender=Message, writing=True)

    # Chat summaries run in the same worker: memory off or not, it steps aside; only
    # TASKS_YIELD_TO_CHAT = 0 says background work never does.
    assert told == [True, False]


def test_a_hold_arriving_while_a_connection_closes_does_not_crash_the_worker():
    """The hold's handler runs between any two instructions of the main thread, also inside
    Django's close() of a connection: the driver's connection closed, not yet forgotten."""
    import sqlite3

    from django.db import connections

    wrapper = connections["default"]
    closing = sqlite3.connect(":memory:")
    closing.close()
    kept = wrapper.connection
    wrapper.connection = closing
    worker_hold.hold()
    try:
        # Before the fix: sqlite3.ProgrammingError out of the handler, in the worker's task.
        worker_hold._stop_if_held(worker_hold.HOLD_SIGNAL, None)
    finally:
        worker_hold.release()
        wrapper.connection = kept
