"""The background worker: django-tasks-db's, plus what it leaves out.

django-tasks-db (0.13) claims a READY task (status RUNNING, its worker id appended to
`worker_ids`), runs it and marks it SUCCESSFUL or FAILED. It does not retry, and a task
whose worker died stays RUNNING for ever. This worker adds both, for every task of every
app, without the tasks knowing:

- **Retries with backoff.** A task that raises goes back to READY to run again after
  TASKS_RETRY_DELAY x 2^(attempt-1) seconds (at most an hour), its last error kept in the
  row; after TASKS_MAX_ATTEMPTS attempts it stays FAILED (admin: Task results, status
  Failed). The attempt count is the number of claims, `len(worker_ids)`. A task refused
  for what it sends (PERMANENT: a MemoryInputError, which is also what an MCP tool error
  about the arguments becomes) would fail the same way every time: it stays FAILED at once.
- **Recovery of abandoned tasks.** A task RUNNING for longer than TASKS_RUNNING_TIMEOUT, or
  whose worker (`<host>:<pid>:<random>`) is a dead process on this host, is put back to
  READY (or FAILED once it has used its attempts). Every worker sweeps at start and then
  every TASKS_SWEEP_INTERVAL seconds (30), so a task of a worker killed on this host runs
  again within half a minute when any worker is up; one of a worker gone on another machine
  once TASKS_RUNNING_TIMEOUT has passed.
- **Several workers, on any number of machines**, share the app's Postgres: a worker claims
  a task with SELECT ... FOR UPDATE SKIP LOCKED (django-tasks-db), so each runs once.

- **A database it cannot use** (locked past its timeout by another process, moved away,
  stopped) does not end the worker: it logs one line, waits TASKS_DATABASE_RETRY seconds and
  tries again, for as long as it takes; the task it was running when the database went
  away is queued again (its own, so at once).

Tasks must therefore be idempotent: memory's are (memory/learning/conversations.py).

It runs as a process of its own: `manage.py db_worker` (this app's command overrides
django-tasks-db's of the same name: `memory` comes first in INSTALLED_APPS), which `make
run` starts beside the web app at a lower CPU priority (`--nice`, the Procfile). It claims
the ready tasks by priority, then age, and a task with `run_after` only once that time has
come (django-tasks-db's queries). Tests and scripts run what is ready with
`run_ready_tasks()`.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import timedelta

from django.conf import settings
from django.db import InterfaceError, OperationalError, close_old_connections, connections
from django.utils import timezone
from django.utils.crypto import get_random_string
from django_tasks import DEFAULT_TASK_BACKEND_ALIAS, TaskResultStatus
from django_tasks_db.management.commands.db_worker import Worker as DatabaseWorker
from django_tasks_db.models import DBTaskResult

from core import processes

logger = logging.getLogger("memory.worker.database")

MAX_RETRY_DELAY = 3600.0  # seconds: the backoff stops doubling at an hour
ABANDONED = "memory.worker.database.TaskAbandoned"
# Errors no retry can mend: the input itself is refused (memory/client/errors.py).
PERMANENT = frozenset(
    {"memory.client.errors.MemoryInputError", "memory.client.errors.MemoryToolError"}
)


class TaskAbandoned(Exception):
    """A task whose worker stopped answering, once it has used all its attempts."""


def new_worker_id() -> str:
    """`<host>:<pid>:<random>` (at most 64 characters): a dead pid on this host is seen at once."""
    return f"{processes.owner()}:{get_random_string(8)}"


def retry_delay(attempt: int) -> float:
    """Seconds before attempt `attempt + 1`, after `attempt` failed ones."""
    return min(settings.TASKS_RETRY_DELAY * 2 ** max(attempt - 1, 0), MAX_RETRY_DELAY)


def requeue_abandoned(
    *, backend_name: str = DEFAULT_TASK_BACKEND_ALIAS, mine: str | None = None
) -> int:
    """Put back the RUNNING tasks nobody runs any more (and those of the worker `mine`,
    which runs none now); returns how many were found."""
    stale_before = timezone.now() - timedelta(seconds=settings.TASKS_RUNNING_TIMEOUT)
    running = DBTaskResult.objects.running().filter(backend_name=backend_name)
    found = 0
    for row in running.only("id", "started_at", "worker_ids"):
        last = row.worker_ids[-1] if row.worker_ids else ""
        stale = row.started_at is None or row.started_at < stale_before
        if not (stale or last == mine or processes.dead(last)):
            continue
        found += _put_back(row.id, attempts=len(row.worker_ids), worker=last)
    return found


def _put_back(task_id, *, attempts: int, worker: str) -> int:
    # Only if it is still RUNNING: its worker may have finished it in the meantime.
    still = DBTaskResult.objects.filter(id=task_id, status=TaskResultStatus.RUNNING)
    if attempts >= settings.TASKS_MAX_ATTEMPTS:
        updated = still.update(
            status=TaskResultStatus.FAILED,
            finished_at=timezone.now(),
            exception_class_path=ABANDONED,
            traceback=f"TaskAbandoned: worker {worker or '?'} stopped during attempt "
            f"{attempts} of {settings.TASKS_MAX_ATTEMPTS}",
        )
        if updated:
            logger.error(
                "task %s abandoned by %s: failed after %d attempts", task_id, worker, attempts
            )
        return updated
    updated = still.update(status=TaskResultStatus.READY, run_after=timezone.now())
    if updated:
        logger.warning(
            "task %s abandoned by %s (attempt %d): queued again", task_id, worker, attempts
        )
    return updated


class Worker(DatabaseWorker):
    """django-tasks-db's worker loop; a failed attempt is queued again while attempts remain."""

    def run(self) -> None:
        while True:
            try:
                # What this worker left running when the database went away is its own.
                requeue_abandoned(backend_name=self.backend_name, mine=self.worker_id)
                return super().run()
            except (OperationalError, InterfaceError) as exc:
                if self.batch:  # a script's one run: its caller hears of it
                    raise
                self.running_task = False  # a stop signal now ends the wait at once
                logger.warning(
                    "database unavailable (%s: %s): the worker tries again in %.0f s",
                    type(exc).__name__,
                    exc,
                    settings.TASKS_DATABASE_RETRY,
                )
                # A connection left in a failed transaction would fail every next query.
                connections.close_all()
                time.sleep(settings.TASKS_DATABASE_RETRY)

    def run_task(self, db_task_result: DBTaskResult) -> None:
        super().run_task(db_task_result)
        if db_task_result.status != TaskResultStatus.FAILED:
            return
        attempts = len(db_task_result.worker_ids)
        if db_task_result.exception_class_path in PERMANENT:
            logger.error(
                "task %s (%s) refused by the memory: left failed, not retried",
                db_task_result.id,
                db_task_result.task_path,
            )
            return
        if attempts >= settings.TASKS_MAX_ATTEMPTS:
            logger.error(
                "task %s (%s) failed %d times: left failed",
                db_task_result.id,
                db_task_result.task_path,
                attempts,
            )
            return
        delay = retry_delay(attempts)
        # The error stays in the row (exception_class_path, traceback) until the next attempt.
        DBTaskResult.objects.filter(id=db_task_result.id).update(
            status=TaskResultStatus.READY,
            finished_at=None,
            run_after=timezone.now() + timedelta(seconds=delay),
        )
        logger.warning(
            "task %s (%s) failed (attempt %d of %d): again in %.0f s",
            db_task_result.id,
            db_task_result.task_path,
            attempts,
            settings.TASKS_MAX_ATTEMPTS,
            delay,
        )


def make_worker(*, batch: bool = False, worker_id: str | None = None, **options) -> Worker:
    """A worker on every queue of the default backend (`batch`: run what is ready, then stop)."""
    return Worker(
        queue_names=options.pop("queue_names", ["*"]),
        interval=options.pop("interval", settings.TASKS_WORKER_INTERVAL),
        batch=batch,
        backend_name=options.pop("backend_name", DEFAULT_TASK_BACKEND_ALIAS),
        startup_delay=options.pop("startup_delay", False),
        max_tasks=options.pop("max_tasks", None),
        worker_id=worker_id or new_worker_id(),
        excluded_queue_names=options.pop("excluded_queue_names", []),
    )


def keep_connections() -> None:
    """This process keeps its database connections for its life, checked before use after a
    pause or an error (CONN_HEALTH_CHECKS): with Django's default (CONN_MAX_AGE 0, one per
    web request), django-tasks-db's loop opened a new Postgres connection for every job,
    most of a short job's cost. A dropped one is still replaced (the database's restart).
    SQLite is left as it is: opening its file costs nothing, and a file moved or replaced
    is seen at the next job rather than written on through a handle kept open."""
    for alias in connections:
        if connections[alias].vendor != "sqlite":
            connections.settings[alias].update(CONN_MAX_AGE=None, CONN_HEALTH_CHECKS=True)
    connections.close_all()


def run_ready_tasks() -> None:
    """Run every task that is ready now, in this thread (tests, benchmarks, scripts)."""
    make_worker(batch=True).run()


class Sweeper(threading.Thread):
    """Requeues abandoned tasks, and learning that never reached the queue, every
    TASKS_SWEEP_INTERVAL seconds."""

    def __init__(self, backend_name: str = DEFAULT_TASK_BACKEND_ALIAS):
        super().__init__(name="tasks-sweeper", daemon=True)
        self.backend_name = backend_name
        self.stopped = threading.Event()

    def run(self) -> None:
        from memory.learning import conversations

        while not self.stopped.wait(settings.TASKS_SWEEP_INTERVAL):
            try:
                requeue_abandoned(backend_name=self.backend_name)
                conversations.queue_unqueued()
            except Exception:
                logger.exception("sweeping abandoned tasks failed; trying again later")
            finally:
                close_old_connections()
