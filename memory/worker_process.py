"""The background worker beside the app as a child process at a lower CPU priority.

`make run` runs one command, so the app starts its worker (TASKS_WORKER_IN_PROCESS). As a
thread of the app (TASKS_WORKER_MODE=thread, memory/worker.py) its Python competes with
the replies' event loop for the interpreter's lock: a busy worker made a reply 1.07-1.21x
slower at the median (docs/BENCHMARKS.md). As a child process (the default) it has its own
interpreter, and `--nice` lets the kernel give the app's process the cores first.

Parent side: `start_beside_app()` starts a daemon thread that runs `manage.py db_worker`
(memory/management/commands/db_worker.py: retries and recovery) with the app's settings
and environment, so the same SQLite file, and starts it again when it dies, after a
backoff, logging an error each time. The app's exit stops it (atexit: SIGTERM, then
SIGKILL). The child's environment says MCP_SPAWN_SERVER=false: it uses the app's memory
server through its Unix socket and waits for it, never starting a second one.

Child side: `follow_parent()` (the command's `--parent-pid`) ends the worker when the app
dies without its atexit (SIGKILL, a crash): Linux's PR_SET_PDEATHSIG, and elsewhere or
meanwhile a thread that sees the parent's pid change.
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django_tasks import DEFAULT_TASK_BACKEND_ALIAS, task_backends
from django_tasks_db.backend import DatabaseBackend

from memory.mcp_client import ServerTarget

logger = logging.getLogger("memory.worker")

# A child that lived this long (s) before dying is started again at once; one that dies
# sooner waits FIRST_RESTART_DELAY, doubling up to MAX_RESTART_DELAY (a crash at start-up
# does not spin).
HEALTHY_AFTER = 60.0
FIRST_RESTART_DELAY = 1.0
MAX_RESTART_DELAY = 60.0
# Seconds the app's exit gives the worker to finish its task before killing it; a killed
# worker's task is put back by the next worker (memory/worker.py).
STOP_GRACE = 10.0
PARENT_CHECK_INTERVAL = 1.0  # seconds between the child's looks at its parent's pid
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def worker_command(*, parent_pid: int) -> list[str]:
    """`manage.py db_worker` as the app runs it beside itself."""
    return [
        sys.executable,
        str(settings.BASE_DIR / "manage.py"),
        "db_worker",
        "--no-reload",
        "--no-startup-delay",
        "--interval",
        str(settings.TASKS_WORKER_INTERVAL),
        "--nice",
        str(settings.TASKS_WORKER_NICE),
        "--parent-pid",
        str(parent_pid),
    ]


def worker_environment() -> dict[str, str]:
    """The app's environment (same settings, same database), minus starting a memory server."""
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "ikario_clone.settings"),
        "MCP_SPAWN_SERVER": "false",
    }


class WorkerProcess(threading.Thread):
    """Runs the worker as a child process for the life of the app, restarting it if it dies.

    The child is started from this thread, which lives as long as the app: PR_SET_PDEATHSIG
    fires when the thread that started the child ends, not only the process.
    """

    def __init__(self):
        super().__init__(name="tasks-worker-process", daemon=True)
        self.stopping = threading.Event()
        self.process: subprocess.Popen | None = None
        self.starts = 0
        self._lock = threading.Lock()

    def run(self) -> None:
        delay = 0.0
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                code = self._run_once()
            except OSError as exc:  # could not even start it (a missing interpreter?)
                code = f"not started: {exc}"
            if self.stopping.is_set():
                break
            lived = time.monotonic() - started
            if lived >= HEALTHY_AFTER:
                delay = 0.0
            else:
                delay = min(max(delay * 2, FIRST_RESTART_DELAY), MAX_RESTART_DELAY)
            logger.error(
                "background worker process %s exited (code %s) after %.0f s: "
                "starting it again in %.0f s",
                self.process.pid if self.process else "-",
                code,
                lived,
                delay,
            )
            self.stopping.wait(delay)

    def _run_once(self) -> int | None:
        """Start the child and wait for its end; its exit code (None if not started)."""
        with self._lock:
            if self.stopping.is_set():
                return None
            self.process = None
            # Its own process group: a Ctrl-C in the terminal reaches the app, whose exit
            # stops the worker, not both at once (and no restart in between).
            self.process = subprocess.Popen(
                worker_command(parent_pid=os.getpid()),
                cwd=settings.BASE_DIR,
                env=worker_environment(),
                process_group=0,
            )
            self.starts += 1
        logger.info("background worker process %d started", self.process.pid)
        return self.process.wait()

    def stop(self, grace: float = STOP_GRACE) -> None:
        with self._lock:
            self.stopping.set()
            process = self.process
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            logger.error("background worker process %d did not stop: killed", process.pid)
            process.kill()
            process.wait()


_started: list[WorkerProcess] = []
_start_lock = threading.Lock()


def start_beside_app() -> WorkerProcess | None:
    """The worker `make run` runs beside the app (TASKS_WORKER_MODE): a child process
    (returned), or memory/worker.py's thread. Once per process; database backend only."""
    if not isinstance(task_backends[DEFAULT_TASK_BACKEND_ALIAS], DatabaseBackend):
        logger.info("tasks go to another backend: no worker beside the app")
        return None
    if settings.TASKS_WORKER_MODE == "thread" or not _memory_server_shared():
        from memory.worker import start_in_process

        start_in_process()
        return None
    with _start_lock:
        if _started:
            return None
        worker = WorkerProcess()
        _started.append(worker)
        worker.start()
    atexit.register(worker.stop)
    return worker


def _memory_server_shared() -> bool:
    """Whether a worker process reaches the app's memory server: over its URL, or through
    the Unix socket the server the app starts serves beside stdio. IKARIO_SOCKET=off turns
    that socket off: a worker process would wait for it and fail every save, so the worker
    runs as a thread of the app instead (which uses the app's own client)."""
    if ServerTarget.from_settings().server_url or os.environ.get("IKARIO_SOCKET") != "off":
        return True
    logger.warning(
        "IKARIO_SOCKET=off: a worker process could not reach the app's memory server, "
        "so the worker runs as a thread of the app"
    )
    return False


def follow_parent(parent_pid: int) -> None:
    """In the child: SIGTERM to this process (the worker's graceful stop) once the app whose
    pid is `parent_pid` has gone, whichever way it went."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        told = libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) == 0
    except (OSError, AttributeError):  # not Linux
        told = False
    if os.getppid() != parent_pid:  # gone before the kernel was told
        os.kill(os.getpid(), signal.SIGTERM)
        return
    if told:
        # Not a second SIGTERM from the thread below: it would cut a task short instead of
        # letting the worker finish it.
        return

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(PARENT_CHECK_INTERVAL)
        logger.warning("the app (pid %d) has gone: the background worker stops", parent_pid)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="tasks-parent-watch", daemon=True).start()
