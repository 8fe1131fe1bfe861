"""A reply holds this machine's background workers at once, not at their next look.

memory/quiet.py has background work look, before each of its steps, whether an answer is
streaming; a step already under way when a reply starts ran on beside it. On two loaded
cores that step (most often a job's first reads, right after its claim) made a reply
1.10x slower at the median, against 1.04x with the worker stopped for the reply
(bench/background_work.py, docs/BENCHMARKS.md). So the app tells its workers when a reply
starts and when none is left, as it tells its memory server (memory/foreground.py), with
two signals: SIGUSR1 holds, SIGUSR2 releases. A held worker stops where it is, between two
Python instructions of its task, until the release or TASKS_YIELD_TO_CHAT seconds; inside a
database transaction it goes on to the transaction's end (it may hold SQLite's one write
lock, which the reply needs) and waits at its next look instead.

How the app finds its workers: each `manage.py db_worker` (the child process `make run`
starts, or one started on its own) announces itself with an empty file named after its pid
in a directory of this machine's temp dir, one per database (`workers_dir`): the workers of
a database are the ones whose queue it is. Before signalling a pid the app checks that its
process is a `db_worker` that catches both signals (/proc/<pid>/status), so a stale file
whose pid was reused never ends a stranger (a signal's default action ends a process).
Without /proc (macOS) nobody is told, and workers look as before.

In the worker, the two signals are blocked in every thread and received by a thread of
their own (`sigwait`), so a release is seen even while the main thread is stopped inside a
signal handler; a hold then asks the main thread to stop with `_thread.interrupt_main`,
whose handler runs at the main thread's next Python instruction.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import functools
import hashlib
import logging
import os
import signal
import tempfile
import threading
import time
from pathlib import Path

from django.conf import settings
from django.db import connections

logger = logging.getLogger("memory.worker")

# None where the platform has no user signals (Windows): nobody is told, nothing stops.
HOLD_SIGNAL = getattr(signal, "SIGUSR1", None)
RELEASE_SIGNAL = getattr(signal, "SIGUSR2", None)
# Between two looks at a shutdown while stopped: a SIGTERM's handler runs within this.
SLICE_SECONDS = 0.05
WORKER_WORD = b"db_worker"


def workers_dir(database: dict | None = None) -> Path:
    """Where the workers of `database` (default: this process's) announce themselves."""
    database = database or connections["default"].settings_dict
    return _dir_for(
        database.get("ENGINE", ""),
        database.get("HOST") or "",
        str(database.get("PORT") or ""),
        str(database.get("NAME") or ""),
    )


@functools.lru_cache(maxsize=8)
def _dir_for(engine: str, host: str, port: str, name: str) -> Path:
    # Cached: the app asks at every reply's start and end, on its event loop.
    if engine.endswith("sqlite3") and not name.startswith("file:"):
        name = os.path.realpath(name)
    digest = hashlib.sha256("|".join((engine, host, port, name)).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"ikario-workers-{os.getuid()}" / digest


# --- the app's side -----------------------------------------------------------------------


def tell_workers(*, busy: bool, directory: Path | None = None) -> int:
    """Hold (busy) or release every worker announced for this database on this machine;
    returns how many were told. Stale announcements (no such process) are removed."""
    if HOLD_SIGNAL is None or RELEASE_SIGNAL is None:
        return 0
    directory = directory or workers_dir()
    try:
        if directory.stat().st_uid != os.getuid():  # not ours: trust none of its names
            return 0
        names = os.listdir(directory)
    except OSError:  # no worker ever announced itself here
        return 0
    told = 0
    for name in names:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        pid = int(name)
        if not _listens(pid):
            if not Path(f"/proc/{pid}").exists():
                with contextlib.suppress(OSError):
                    (directory / name).unlink()
            continue
        try:
            os.kill(pid, HOLD_SIGNAL if busy else RELEASE_SIGNAL)
        except OSError:  # gone meanwhile
            continue
        told += 1
    return told


def _listens(pid: int) -> bool:
    """Whether `pid` is a background worker that catches both signals."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if WORKER_WORD not in command:
        return False
    caught = next(
        (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0"
    )
    mask = int(caught, 16)
    return all(mask >> (int(s) - 1) & 1 for s in (HOLD_SIGNAL, RELEASE_SIGNAL))


# --- the worker's side --------------------------------------------------------------------

_until = 0.0  # monotonic time at which the hold ends by itself (0: not held)
_released = threading.Event()
_stopped = False  # the main thread is stopped in the handler (it does not stop twice)


def most() -> float:
    return float(settings.TASKS_YIELD_TO_CHAT)


def held() -> bool:
    return time.monotonic() < _until


def hold() -> None:
    """Held by a reply: for at most TASKS_YIELD_TO_CHAT seconds unless released."""
    global _until
    _until = time.monotonic() + most()
    _released.clear()


def release() -> None:
    global _until
    _until = 0.0
    _released.set()


def wait_released(longest: float) -> float:
    """Wait while held, at most `longest` seconds; the seconds waited."""
    start = time.monotonic()
    while held():
        left = min(_until, start + longest) - time.monotonic()
        if left <= 0:
            break
        # In slices: a shutdown's handler, which may end the hold, gets to run between them.
        _released.wait(min(left, SLICE_SECONDS))
    return time.monotonic() - start


def listen() -> threading.Thread | None:
    """In the worker process's main thread, before any other thread starts: take the app's
    hold and release, then announce this process. Nothing where the signals do not exist
    or background work never yields (TASKS_YIELD_TO_CHAT = 0)."""
    if HOLD_SIGNAL is None or RELEASE_SIGNAL is None or most() <= 0:
        return None
    # Both caught (the app checks it), so a stray signal never ends the worker. The hold's
    # handler is what interrupt_main runs; the release's never runs (the signal stays
    # blocked): the thread below receives both.
    signal.signal(HOLD_SIGNAL, _stop_if_held)
    signal.signal(RELEASE_SIGNAL, lambda signum, frame: None)
    wanted = {HOLD_SIGNAL, RELEASE_SIGNAL}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)

    def receive() -> None:
        while True:
            if signal.sigwait(wanted) == HOLD_SIGNAL:
                hold()
                _thread.interrupt_main(HOLD_SIGNAL)
            else:
                release()

    thread = threading.Thread(target=receive, name="tasks-worker-hold", daemon=True)
    thread.start()
    announce()
    return thread


def announce() -> Path:
    directory = workers_dir()
    directory.mkdir(parents=True, mode=0o700, exist_ok=True)
    path = directory / str(os.getpid())
    path.touch()
    atexit.register(_withdraw, path)
    return path


def _withdraw(path: Path) -> None:
    with contextlib.suppress(OSError):
        path.unlink()


def _stop_if_held(signum, frame) -> None:
    """The main thread, between two instructions of whatever it runs: stop while held,
    unless a database transaction is open (its locks would hold the reply up)."""
    global _stopped
    if _stopped or not held() or _in_transaction():
        return
    _stopped = True
    try:
        waited = wait_released(most())
    finally:
        _stopped = False
    logger.debug("stopped %.3f s for a reply", waited)


def _in_transaction() -> bool:
    for connection in connections.all(initialized_only=True):
        if connection.in_atomic_block:
            return True
        raw = connection.connection
        if raw is None:
            continue
        try:
            if getattr(raw, "in_transaction", False):  # sqlite3
                return True
            info = getattr(raw, "info", None)  # psycopg: anything but IDLE is a transaction
            if info is not None and int(info.transaction_status) != 0:
                return True
        except Exception:  # noqa: BLE001 -- interrupted inside close(): the driver's is shut
            return True  # not a moment to stop: the worker waits at its next look
    return False
