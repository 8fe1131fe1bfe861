"""Workers on PostgreSQL, as production runs them (several `manage.py db_worker` processes,
on one machine or several, sharing the app's database): no job run twice, and a database
restart waited out, the job it interrupted run again. Real worker processes, a real
Postgres server of each test's own."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from tests.fixtures.manage_py import manage
from tests.fixtures.postgres_server import Postgres
from tests.wait import wait_until

ROOT = Path(__file__).resolve().parents[2]
WAIT = 180.0  # seconds: bound on each step on a busy machine
JOBS = 200

ENQUEUE = """
from tests.memory.tasks_for_tests import meet, note_connection, note_run, write_when_allowed
%s
"""

# The queue's rows, read straight from Postgres (a manage.py process per look is seconds).
RESULTS = (
    "SELECT task_path, status, worker_ids FROM django_tasks_database_dbtaskresult"
    " WHERE task_path LIKE 'tests.memory.tasks_for_tests.%'"
)


@pytest.fixture
def postgres(tmp_path):
    """A Postgres of this test's own (a test stops and starts it), migrated."""
    home = Path(tempfile.mkdtemp(prefix="ikario-pg-"))
    server = Postgres(home)
    server.start()
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "DATABASE_URL": server.url,
        "MCP_MEMORY_ENABLED": "false",
        "ANTHROPIC_API_KEY": "",
        "TASKS_DATABASE_RETRY": "0.5",
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("REDIS_URL", None)
    try:
        manage(env, "migrate", "--noinput")
        yield server, env
    finally:
        server.stop()
        shutil.rmtree(home, ignore_errors=True)


def start_worker(env: dict, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "db_worker", "--no-startup-delay", "--no-reload"]
        + ["--interval", "0.1"],
        cwd=ROOT,
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
    )


def stop_worker(worker: subprocess.Popen) -> int:
    if worker.poll() is None:
        worker.send_signal(signal.SIGTERM)
    try:
        return worker.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        worker.kill()
        raise


def enqueue(env: dict, code: str) -> None:
    manage(env, "shell", "-c", ENQUEUE % code)


def results(env: dict) -> list[list]:
    with psycopg.connect(env["DATABASE_URL"], autocommit=True) as connection:
        rows = connection.execute(RESULTS).fetchall()
    return [[path.rsplit(".", 1)[1], status, worker_ids] for path, status, worker_ids in rows]


def test_two_workers_on_one_postgres_never_run_a_job_twice(postgres, tmp_path):
    _, env = postgres
    order = tmp_path / "order"
    here, there = tmp_path / "here", tmp_path / "there"
    # Two jobs that end only when run at the same time: both workers are at work; then
    # the rest, which they share.
    enqueue(
        env,
        f"meet.using(priority=10).enqueue({str(here)!r}, {str(there)!r})\n"
        f"meet.using(priority=10).enqueue({str(there)!r}, {str(here)!r})\n"
        f"for n in range({JOBS}): note_run.enqueue({str(order)!r}, f'job-{{n}}')",
    )
    logs = [tmp_path / "worker-1.log", tmp_path / "worker-2.log"]
    workers = [start_worker(env, log) for log in logs]
    try:
        wait_until(
            lambda: order.exists() and len(order.read_text().split()) >= JOBS,
            "every job ran",
            timeout=WAIT,
        )
        # A run more would be late: wait until no job is left ready or running.
        wait_until(
            lambda: all(status == "SUCCESSFUL" for _, status, _ in results(env)),
            "every job finished",
            timeout=WAIT,
        )
    finally:
        codes = [stop_worker(worker) for worker in workers]
    assert codes == [0, 0], [log.read_text()[-2000:] for log in logs]

    runs = Counter(order.read_text().split())
    assert runs == Counter(f"job-{n}" for n in range(JOBS))  # each once, none lost
    rows = results(env)
    assert len(rows) == JOBS + 2
    assert all(len(worker_ids) == 1 for _, _, worker_ids in rows)  # claimed once each
    met = {worker_ids[0] for task, _, worker_ids in rows if task == "meet"}
    assert len(met) == 2  # the two workers ran at the same time


def test_a_worker_keeps_its_connection_from_job_to_job(postgres, tmp_path):
    # A new Postgres connection per job was most of a short job's cost (bench/worker_throughput).
    _, env = postgres
    pids = tmp_path / "pids"
    enqueue(env, f"for n in range(5): note_connection.enqueue({str(pids)!r})")
    log = tmp_path / "worker.log"
    worker = start_worker(env, log)
    try:
        wait_until(lambda: pids.exists() and len(pids.read_text().split()) == 5, "the jobs ran")
    finally:
        assert stop_worker(worker) == 0, log.read_text()[-3000:]
    assert len(set(pids.read_text().split())) == 1


def test_a_worker_waits_out_a_postgres_restart_and_runs_again_the_job_it_cut(postgres, tmp_path):
    server, env = postgres
    started, allowed, done = (tmp_path / name for name in ("started", "allowed", "done"))
    log = tmp_path / "worker.log"
    worker = start_worker(env, log)
    try:
        enqueue(
            env, f"write_when_allowed.enqueue({str(started)!r}, {str(allowed)!r}, {str(done)!r})"
        )
        wait_until(started.exists, "the worker starts the job", timeout=WAIT)

        server.stop()  # immediate: the worker's connection dropped mid-job
        allowed.write_text("yes")
        wait_until(done.exists, "the job's work ends", timeout=WAIT)
        wait_until(lambda: "database unavailable" in log.read_text(), "it sees Postgres gone")
        assert worker.poll() is None, log.read_text()[-3000:]
        started.unlink()
        server.start()

        # Its outcome was never recorded: it runs again (jobs are idempotent), then is done.
        wait_until(started.exists, "the interrupted job runs again", timeout=WAIT)
        wait_until(
            lambda: [status for _, status, _ in results(env)] == ["SUCCESSFUL"],
            "its outcome is recorded",
            timeout=WAIT,
        )
        after = tmp_path / "after"
        enqueue(env, f"note_run.enqueue({str(after)!r}, 'after')")
        wait_until(after.exists, "the same worker runs a job queued after", timeout=WAIT)
        assert worker.poll() is None
    finally:
        assert stop_worker(worker) == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()


def test_a_worker_told_to_stop_during_a_job_ends_it_then_exits(postgres, tmp_path):
    _, env = postgres
    started, allowed, done = (tmp_path / name for name in ("started", "allowed", "done"))
    log = tmp_path / "worker.log"
    worker = start_worker(env, log)
    try:
        enqueue(
            env, f"write_when_allowed.enqueue({str(started)!r}, {str(allowed)!r}, {str(done)!r})"
        )
        wait_until(started.exists, "the worker starts the job", timeout=WAIT)
        worker.send_signal(signal.SIGTERM)  # as systemd or honcho stops it
        wait_until(lambda: "shutting down gracefully" in log.read_text(), "it hears the stop")
        allowed.write_text("yes")
        assert worker.wait(timeout=WAIT) == 0, log.read_text()[-3000:]
    finally:
        if worker.poll() is None:
            worker.kill()
    assert done.read_text() == "done"
    assert [status for _, status, _ in results(env)] == ["SUCCESSFUL"]
