"""Background tasks on RQ keep the database worker's promises (memory/worker/rq.py), on a
real redis-server: retries with backoff, a permanent error not retried, a job whose worker
was killed run again, a worker that waits out a Redis restart, jobs run in the worker's own
process (one memory session for all)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

import pytest
from django.utils import timezone
from django_rq import get_queue, get_worker
from django_tasks import TaskResultStatus
from redis import exceptions as redis_errors
from rq.registry import StartedJobRegistry

from memory.worker import rq
from tests.fixtures.postgres_server import Postgres
from tests.fixtures.redis_server import redis_on
from tests.memory.rq_tasks import (
    database_answers,
    fails_then_succeeds,
    refused_for_good,
    write_when_allowed,
)
from tests.net import serve_on_a_free_port, stop
from tests.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
RQ_TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}


@pytest.fixture
def on_rq(redis_server, settings):
    settings.RQ_QUEUES = {"default": {"URL": redis_server.url}}
    settings.TASKS = RQ_TASKS
    settings.TASKS_RETRY_DELAY = 0  # retries due at once: a burst worker runs them
    settings.TASKS_MAX_ATTEMPTS = 3
    get_queue("default").empty()
    yield redis_server
    get_queue("default").empty()


def test_the_queue_and_the_worker_are_the_retrying_ones(on_rq):
    assert isinstance(get_queue("default"), rq.RetryingQueue)
    assert isinstance(get_worker("default"), rq.Worker)


def test_a_failing_job_is_retried_until_it_succeeds(on_rq, tmp_path):
    counter = tmp_path / "runs"
    result = fails_then_succeeds.enqueue(str(counter), failures=2)

    get_worker("default").work(burst=True)

    assert counter.read_text() == "3"
    assert fails_then_succeeds.get_result(result.id).status == TaskResultStatus.SUCCESSFUL


def test_the_worker_outlives_redis_going_away_while_a_job_runs(settings, tmp_path):
    workdir = tmp_path / "redis"
    workdir.mkdir()
    redis, port = serve_on_a_free_port(
        lambda port: redis_on(port, workdir, persist=True), timeout=30
    )
    url = f"redis://127.0.0.1:{port}/0"
    settings.RQ_QUEUES = {"default": {"URL": url}}
    settings.TASKS = RQ_TASKS
    started, allowed, done = (str(tmp_path / name) for name in ("started", "allowed", "done"))
    write_when_allowed.enqueue(started, allowed, done)
    worker = worker_process(url, tmp_path)
    try:
        wait_until(lambda: Path(started).exists(), "the worker starts the job")
        stop(redis)
        # The job ends while Redis is away: RQ's worker quit on recording its outcome.
        Path(allowed).write_text("yes")
        wait_until(lambda: Path(done).exists(), "the job ends")
        wait_until(lambda: "Redis went away during job" in log_of(tmp_path), "it fails to record")
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()
        Path(started).unlink()
        redis = redis_on(port, workdir, persist=True)
        wait_until(lambda: answers(get_queue("default").connection), "Redis is back")

        # Its outcome was never recorded: it runs again (jobs are idempotent), at once.
        wait_until(lambda: Path(started).exists(), "the interrupted job runs again")
        after = tmp_path / "after"
        fails_then_succeeds.enqueue(str(after), failures=0)
        wait_until(after.exists, "the same worker runs a job after the restart")
        assert worker.poll() is None
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        stop(redis)


def test_the_jobs_after_a_database_restart_run_on_a_new_connection(on_rq, tmp_path):
    home = Path(tempfile.mkdtemp(prefix="ikario-pg-"))
    database = Postgres(home)
    database.start()
    worker = worker_process(on_rq.url, tmp_path, DATABASE_URL=database.url)
    try:
        first, second = tmp_path / "first", tmp_path / "second"
        database_answers.enqueue(str(first))
        wait_until(first.exists, "a job reaches the database")

        database.stop()  # an immediate stop: the worker's connection is dropped
        database.start()

        database_answers.enqueue(str(second))
        wait_until(second.exists, "a job after the restart reaches the database")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        database.stop()
        shutil.rmtree(home, ignore_errors=True)


def test_a_worker_told_to_stop_during_a_job_ends_it_then_exits(on_rq, tmp_path):
    started, allowed, done = (str(tmp_path / name) for name in ("started", "allowed", "done"))
    write_when_allowed.enqueue(started, allowed, done)
    worker = worker_process(on_rq.url, tmp_path)
    try:
        wait_until(lambda: Path(started).exists(), "the worker starts the job")
        worker.send_signal(signal.SIGTERM)  # as systemd stops it
        # Its maintenance ran before it took the job: due again (every 2 s here) when it ends.
        due = Path(started).stat().st_mtime + 2.5
        wait_until(
            lambda: "warm shut down requested" in log_of(tmp_path) and time.time() > due,
            "the stop request is seen and the maintenance is due",
        )
        Path(allowed).write_text("yes")
        assert worker.wait(timeout=60) == 0, (tmp_path / "worker.log").read_text()
    finally:
        if worker.poll() is None:
            worker.kill()
    assert Path(done).read_text() == "done"
    assert (
        "Scheduler for default started"
        not in (tmp_path / "worker.log").read_text().split("warm shut down requested")[1]
    )


def test_a_job_failing_every_time_stops_after_its_attempts(on_rq, tmp_path):
    counter = tmp_path / "runs"
    result = fails_then_succeeds.enqueue(str(counter), failures=99)

    get_worker("default").work(burst=True)

    assert counter.read_text() == "3"  # TASKS_MAX_ATTEMPTS
    assert fails_then_succeeds.get_result(result.id).status == TaskResultStatus.FAILED


def test_the_retries_wait_the_database_workers_backoff(settings):
    settings.TASKS_RETRY_DELAY = 10
    settings.TASKS_MAX_ATTEMPTS = 4
    policy = rq.retry_policy()
    assert (policy.max, policy.intervals) == (3, [10, 20, 40])


def test_a_permanent_error_is_not_retried(on_rq, tmp_path):
    counter = tmp_path / "runs"
    result = refused_for_good.enqueue(str(counter))

    get_worker("default").work(burst=True)

    assert counter.read_text() == "1"
    assert refused_for_good.get_result(result.id).status == TaskResultStatus.FAILED


def worker_process(redis_url: str, tmp_path: Path, **more_env: str) -> subprocess.Popen:
    """`manage.py rqworker`, as production runs it, in a process of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "REDIS_URL": redis_url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "MCP_MEMORY_ENABLED": "false",
        "TASKS_RETRY_DELAY": "0",
        "TASKS_RQ_MAINTENANCE": "2",
        **more_env,
    }
    return subprocess.Popen(
        [sys.executable, "manage.py", "rqworker", "default", "--with-scheduler"],
        cwd=ROOT,
        env=env,
        stdout=(tmp_path / "worker.log").open("w"),
        stderr=subprocess.STDOUT,
    )


def test_a_job_whose_worker_was_killed_runs_again(on_rq, tmp_path):
    started, allowed, done = (str(tmp_path / name) for name in ("started", "allowed", "done"))
    result = write_when_allowed.enqueue(started, allowed, done)
    worker = worker_process(on_rq.url, tmp_path)
    try:
        wait_until(lambda: Path(started).exists(), "the worker starts the job")
    finally:
        worker.send_signal(signal.SIGKILL)  # dies mid-job: no clean-up of its own
        worker.wait()
    queue = get_queue("default")
    registry = StartedJobRegistry(queue=queue)
    assert result.id in registry.get_job_ids(cleanup=False)

    # The worker started in its place (as systemd does) sees it dead on this host: the job
    # runs again at once, not when its heartbeat lapses minutes later.
    Path(allowed).write_text("yes")
    again = worker_process(on_rq.url, tmp_path)
    try:
        wait_until(lambda: Path(done).exists(), "the job runs again")
        wait_until(
            lambda: write_when_allowed.get_result(result.id).status == TaskResultStatus.SUCCESSFUL,
            "its result is recorded",
        )
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(timeout=30)


def test_the_worker_looks_for_abandoned_jobs_every_half_minute(on_rq):
    # RQ's own default is 10 minutes, and an idle worker waits up to 405 s for a job before
    # it even looks: a killed worker's job would wait that long to run again.
    worker = get_worker("default")
    assert isinstance(worker, rq.Worker) and worker.maintenance_interval == 30
    assert worker.dequeue_timeout == 30


def log_of(tmp_path: Path) -> str:
    return (tmp_path / "worker.log").read_text()


def answers(connection) -> bool:
    try:
        return connection.ping()
    except redis_errors.ConnectionError:
        return False


def test_the_worker_waits_out_a_redis_restart(settings, tmp_path):
    workdir = tmp_path / "redis"
    workdir.mkdir()

    redis, port = serve_on_a_free_port(lambda port: redis_on(port, workdir), timeout=30)
    url = f"redis://127.0.0.1:{port}/0"
    settings.RQ_QUEUES = {"default": {"URL": url}}
    settings.TASKS = RQ_TASKS
    worker = worker_process(url, tmp_path)
    try:
        first = tmp_path / "first"
        fails_then_succeeds.enqueue(str(first), failures=0)
        wait_until(first.exists, "the worker runs a job")

        stop(redis)
        wait_until(lambda: "could not connect to Redis" in log_of(tmp_path), "it sees Redis gone")
        redis = redis_on(port, workdir)
        wait_until(lambda: answers(get_queue("default").connection), "Redis is back")

        after = tmp_path / "after"
        fails_then_succeeds.enqueue(str(after), failures=0)
        wait_until(after.exists, "the same worker runs a job after the restart")
        # The scheduler died with Redis: the worker's maintenance starts it again, so a task
        # due later (a retry, a `run_after`) still runs.
        later = tmp_path / "later"
        due = timezone.now() + timedelta(seconds=1)
        fails_then_succeeds.using(run_after=due).enqueue(str(later), failures=0)
        wait_until(later.exists, "a task due later runs after the restart")
        assert worker.poll() is None
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        stop(redis)
