"""The background worker (memory/worker/database.py) on the real django-tasks-db backend:
retries with backoff, failures left visible, tasks of dead workers put back."""

from __future__ import annotations

import subprocess
import sys
from datetime import timedelta

import pytest
from django.utils import timezone
from django_tasks import TaskResultStatus
from django_tasks_db.models import DBTaskResult

from memory.worker import database as worker
from tests.memory.tasks_for_tests import always_fails, note_run, rename_user
from tests.wait import wait_until


def _row(result) -> DBTaskResult:
    return DBTaskResult.objects.get(id=result.id)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.django_db
def test_it_runs_a_task_and_keeps_its_result(alice):
    result = rename_user.enqueue(alice.pk, "alice2")

    worker.run_ready_tasks()

    row = _row(result)
    assert row.status == TaskResultStatus.SUCCESSFUL
    assert row.return_value == "alice2"
    alice.refresh_from_db()
    assert alice.username == "alice2"


@pytest.mark.django_db
def test_it_runs_higher_priorities_first_and_a_delayed_task_only_once_due(tmp_path):
    order = tmp_path / "order"
    later = timezone.now() + timedelta(hours=1)
    delayed = note_run.using(run_after=later).enqueue(str(order), "delayed")
    note_run.enqueue(str(order), "normal")
    note_run.using(priority=10).enqueue(str(order), "urgent")
    note_run.using(priority=-10).enqueue(str(order), "whenever")

    worker.run_ready_tasks()

    assert order.read_text().split() == ["urgent", "normal", "whenever"]
    assert _row(delayed).status == TaskResultStatus.READY
    DBTaskResult.objects.filter(id=delayed.id).update(run_after=timezone.now())
    worker.run_ready_tasks()
    assert order.read_text().split()[-1] == "delayed"


@pytest.mark.django_db
def test_it_retries_a_failing_task_then_leaves_it_failed(settings):
    settings.TASKS_MAX_ATTEMPTS = 3
    settings.TASKS_RETRY_DELAY = 0
    result = always_fails.enqueue("the memory server is down")

    worker.run_ready_tasks()

    row = _row(result)
    assert row.status == TaskResultStatus.FAILED
    assert len(row.worker_ids) == 3
    assert row.exception_class_path == "tests.memory.tasks_for_tests.Boom"
    assert "the memory server is down" in row.traceback


@pytest.mark.django_db
def test_it_waits_longer_before_each_retry(settings):
    settings.TASKS_MAX_ATTEMPTS = 5
    settings.TASKS_RETRY_DELAY = 60
    result = always_fails.enqueue("timeout")

    before = timezone.now()
    worker.run_ready_tasks()  # one attempt: the retry is not due yet

    row = _row(result)
    assert row.status == TaskResultStatus.READY
    assert len(row.worker_ids) == 1
    assert row.run_after >= before + timedelta(seconds=60)
    assert "timeout" in row.traceback  # the last error stays visible until the next attempt
    assert [worker.retry_delay(n) for n in (1, 2, 3)] == [60, 120, 240]
    settings.TASKS_RETRY_DELAY = 10_000
    assert worker.retry_delay(10) == worker.MAX_RETRY_DELAY


@pytest.mark.django_db
def test_it_puts_back_a_task_whose_worker_died_on_this_host(alice):
    result = rename_user.enqueue(alice.pk, "recovered")
    dead = f"{worker.new_worker_id().split(':')[0]}:{_dead_pid()}:abcdefgh"
    DBTaskResult.objects.filter(id=result.id).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now(), worker_ids=[dead]
    )

    worker.run_ready_tasks()  # sweeps first, then runs it

    row = _row(result)
    assert row.status == TaskResultStatus.SUCCESSFUL
    assert row.worker_ids[0] == dead and len(row.worker_ids) == 2
    alice.refresh_from_db()
    assert alice.username == "recovered"


@pytest.mark.django_db
def test_it_puts_back_a_task_running_past_the_timeout_and_no_other(settings, alice, bob):
    settings.TASKS_RUNNING_TIMEOUT = 60
    stale = rename_user.enqueue(alice.pk, "stale")
    fresh = rename_user.enqueue(bob.pk, "fresh")
    elsewhere = ["another-host:1234:abcdefgh"]
    DBTaskResult.objects.filter(id=stale.id).update(
        status=TaskResultStatus.RUNNING,
        started_at=timezone.now() - timedelta(seconds=61),
        worker_ids=elsewhere,
    )
    DBTaskResult.objects.filter(id=fresh.id).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now(), worker_ids=elsewhere
    )

    assert worker.requeue_abandoned() == 1

    assert _row(stale).status == TaskResultStatus.READY
    assert _row(fresh).status == TaskResultStatus.RUNNING


@pytest.mark.django_db
def test_it_fails_an_abandoned_task_that_used_its_attempts(settings, alice):
    settings.TASKS_MAX_ATTEMPTS = 2
    result = rename_user.enqueue(alice.pk, "never")
    DBTaskResult.objects.filter(id=result.id).update(
        status=TaskResultStatus.RUNNING,
        started_at=timezone.now() - timedelta(days=1),
        worker_ids=["host-a:1:aaaaaaaa", "host-b:2:bbbbbbbb"],
    )

    worker.run_ready_tasks()

    row = _row(result)
    assert row.status == TaskResultStatus.FAILED
    assert row.exception_class_path == worker.ABANDONED
    assert "host-b:2:bbbbbbbb" in row.traceback
    alice.refresh_from_db()
    assert alice.username == "alice"


@pytest.mark.django_db(transaction=True)
def test_a_running_worker_puts_back_a_dead_workers_task_without_a_restart(settings, alice):
    # Two workers on a machine, one killed and not started again: the other one's sweeper
    # sees the dead process and puts its task back within TASKS_SWEEP_INTERVAL.
    settings.TASKS_SWEEP_INTERVAL = 0.1
    result = rename_user.enqueue(alice.pk, "recovered")
    dead = f"{worker.new_worker_id().split(':')[0]}:{_dead_pid()}:abcdefgh"
    DBTaskResult.objects.filter(id=result.id).update(
        status=TaskResultStatus.RUNNING, started_at=timezone.now(), worker_ids=[dead]
    )
    sweeper = worker.Sweeper()
    sweeper.start()
    try:
        wait_until(lambda: _row(result).status == TaskResultStatus.READY, "the task put back")
    finally:
        sweeper.stopped.set()
        sweeper.join(timeout=30)
