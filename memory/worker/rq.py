"""Background tasks on RQ (REDIS_URL set) keep the promises of the database worker.

memory/worker/database.py gives every task on the database backend retries with backoff and the
re-run of a task whose worker died. On RQ, the same promises come from RQ itself, set up
here and named in settings.RQ:

- **Retries with backoff.** `RetryingQueue` gives every job RQ's `Retry`: the same number
  of attempts (TASKS_MAX_ATTEMPTS) and the same delays (`worker.retry_delay`) as the
  database worker. A job refused for what it sends (`worker.PERMANENT`: the memory refuses
  its input) would fail the same way every time: `Worker` fails it at once.
- **Abandoned jobs run again.** A job whose worker was killed stays in RQ's started
  registry until its heartbeat lapses (minutes); any worker's maintenance then retries it
  while it has attempts left (RQ's StartedJobRegistry.cleanup), so the retry above covers
  this too. A worker that is a dead process on this host (the one systemd just restarted)
  is not waited for: the maintenance, also run as a worker starts, retries its jobs at
  once. `Worker` runs that maintenance every TASKS_RQ_MAINTENANCE s (30), not RQ's 10
  minutes, and waits for a job no longer than that, so it runs even on an idle queue.
- **One memory session per worker process.** RQ's default worker forks a child per job, and
  each child opened its own MCP session to the memory server and never closed it. `Worker`
  runs jobs in its own process (RQ's SimpleWorker): the process's one long-lived client
  (memory/client/mcp.py) serves every job and is closed when the worker exits.
- **A Redis restart is waited out**, not fatal: RQ's worker retries its connection with
  backoff while it waits for jobs (the production units restart it on any other exit).
  The scheduler (retries due later, tasks with a `run_after`) is a child process that
  exits when Redis goes away: the worker's next maintenance starts it again. Redis going
  away while a job runs, or while its outcome is recorded, no longer ends the worker: it
  waits for Redis, then fails the job with a retry (its outcome was not recorded).
- **A database restart is survived**: each job starts on a working connection (a dropped
  one is replaced), as a web request does.
- **Learning whose job never reached the queue** (Redis was away when a turn ended) is
  queued again by each maintenance round (`autosave.queue_unqueued`).

Run with `manage.py rqworker default --with-scheduler` (the scheduler runs retries due
later and tasks given a `run_after`).
"""

from __future__ import annotations

import logging
import socket
import time

from django.conf import settings
from django.db import connections
from django_rq.queues import DjangoRQ
from redis import exceptions as redis_errors
from rq import Retry
from rq.job import JobStatus
from rq.registry import StartedJobRegistry
from rq.worker import SimpleWorker

from core import processes
from memory.learning import conversations
from memory.worker.database import PERMANENT, retry_delay

REDIS_WAIT_MAX = 10.0  # seconds between two tries to reach Redis again, at most

logger = logging.getLogger("memory.worker.database")

# Where django-tasks-rq's failure callback records the class of each error of a job.
ERRORS_META = "_django_tasks_rq_exceptions"


def retry_policy() -> Retry | None:
    retries = settings.TASKS_MAX_ATTEMPTS - 1
    if retries < 1:
        return None
    return Retry(max=retries, interval=[int(retry_delay(n)) for n in range(1, retries + 1)])


class RetryingQueue(DjangoRQ):
    """Every job enqueued gets the database worker's retries, unless it says otherwise."""

    def create_job(self, *args, **kwargs):
        if kwargs.get("retry") is None:
            kwargs["retry"] = retry_policy()
        return super().create_job(*args, **kwargs)


def drop_dead_database_connections() -> None:
    """Before each job: a connection the database dropped (a restart, a network blip) is
    closed, so the job opens a new one. Django does this around each web request; a worker
    kept its dead connection, and every later job (and every retry) failed on it."""
    for connection in connections.all(initialized_only=True):
        if connection.connection is not None and not connection.is_usable():
            connection.close()


class Worker(SimpleWorker):
    """Jobs run in the worker's own process (one memory session for all of them); a
    permanent error is not retried; maintenance every TASKS_RQ_MAINTENANCE s."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("maintenance_interval", settings.TASKS_RQ_MAINTENANCE)
        super().__init__(*args, **kwargs)

    @property
    def dequeue_timeout(self) -> int:
        # RQ waits for a job up to its worker TTL (405 s) and only then runs maintenance.
        return min(super().dequeue_timeout, self.maintenance_interval)

    def execute_job(self, job, queue):
        drop_dead_database_connections()
        try:
            super().execute_job(job, queue)
        except redis_errors.ConnectionError as exc:
            # RQ's loop quits on any error but a wait for a job: wait for Redis instead.
            logger.warning("Redis went away during job %s (%s): waiting for it", job.id, exc)
            self.wait_for_redis()
            self.retry_interrupted(job, queue, exc)

    def expire_jobs_of_dead_workers(self) -> None:
        """Mark as lapsed the started jobs of workers that will never finish them, so the
        registry clean-up that follows retries them now."""
        for queue in self.queues:
            registry = StartedJobRegistry(queue=queue)
            entries = self.connection.zrange(registry.key, 0, -1)
            ids = [registry.parse_job_id(entry) for entry in entries]
            jobs = self.job_class.fetch_many(ids, self.connection)
            for entry, job in zip(entries, jobs, strict=True):
                if job is not None and self._is_dead(job.worker_name):
                    logger.warning("job %s of dead worker %s: retried now", job.id, job.worker_name)
                    self.connection.zadd(registry.key, {entry: 0}, xx=True)

    def _is_dead(self, name: str | None) -> bool:
        """A worker whose key expired (it stopped answering anywhere), or a dead process on
        this host (the one systemd just restarted)."""
        if not name or name == self.name:
            return False
        owner = self.find_by_key(self.redis_worker_namespace_prefix + name, self.connection)
        if owner is None:
            return True
        here = owner.hostname == socket.gethostname()
        return here and bool(owner.pid) and processes.gone(owner.pid)

    def retry_interrupted(self, job, queue, exc) -> None:
        """The job's outcome was not recorded: it fails with a retry now (its attempts and
        backoff), rather than when its heartbeat lapses (minutes). Jobs are idempotent."""
        try:
            if job.get_status(refresh=True) == JobStatus.STARTED:
                execution = getattr(self, "execution", None)
                reason = f"Redis went away: {exc}"
                self.handle_job_failure(job, queue, exc_string=reason, execution=execution)
        except Exception as error:  # Redis away again, the job lost with it: not our loop's end
            logger.warning("job %s not retried now (%s): left to the maintenance", job.id, error)

    def heartbeat(self, *args, **kwargs):
        try:
            super().heartbeat(*args, **kwargs)
        except redis_errors.ConnectionError:
            self.wait_for_redis()
            super().heartbeat(*args, **kwargs)

    def wait_for_redis(self) -> None:
        delay = 1.0
        while True:
            try:
                self.connection.ping()
                logger.info("Redis is back")
                return
            except redis_errors.ConnectionError:
                time.sleep(delay)
                delay = min(delay * 2, REDIS_WAIT_MAX)

    def run_maintenance_tasks(self):
        if self._stop_requested:
            # RQ runs maintenance before it looks at a stop request: it would start a new
            # scheduler process (the old one stopped with the worker) and never exit.
            return
        try:
            self.expire_jobs_of_dead_workers()
        except redis_errors.RedisError as exc:
            logger.warning("looking for dead workers' jobs failed: %s", exc)
        super().run_maintenance_tasks()
        try:
            conversations.queue_unqueued()
        except Exception as exc:  # the database may be away too: the next round tries again
            logger.warning("queueing the learning left unqueued failed: %s", exc)

    def handle_job_failure(self, job, queue, started_job_registry=None, exc_string="", **kw):
        errors = job.meta.get(ERRORS_META) or []
        if errors and errors[-1] in PERMANENT and job.retries_left:
            logger.error("job %s refused for what it sends (%s): not retried", job.id, errors[-1])
            job.retries_left = 0
        return super().handle_job_failure(
            job, queue, started_job_registry=started_job_registry, exc_string=exc_string, **kw
        )
