"""Imports and resets as background jobs: the request answers 202 at once with where to
follow the job, and the job goes on in the worker (memory/worker.py), one batch at a time.

An import of thousands of memories or a reset of tens of thousands outlasts a request's
memory call (MCP_CALL_TIMEOUT): answered "no answer within 10 s" while the server went on
deleting or storing, the user was told it failed when it had not. Now the view checks what
it can at once (the confirmation, the file: refused whole with what is wrong and where),
records a MemoryJob and enqueues `run_job`; the memory page shows the job's progress, and
/api/memory/jobs/<id> says where it is (state, done of total, outcome, error).

A user's jobs run one at a time (memory/limits.py: another is refused while one is queued
or running), each batch a call of its own in the worker's process, as background work
(the memory server serves recall searches first: ikario_rag/shares.py). A job stopped
half-way (memory unavailable) says so, with what it did: importing the same file again
adds only what is missing. A job whose worker died runs again from the start (both kinds
are idempotent).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone
from django_tasks import task

from memory import controls, limits, services, transfer
from memory import validation as check
from memory.errors import MemoryBusy, MemoryServiceError
from memory.models import MemoryJob

logger = logging.getLogger("memory.jobs")


def _start(*, user, request, kind: str, records: list | None = None) -> MemoryJob:
    # A job that has not moved for TASKS_RUNNING_TIMEOUT is not under way (its task failed
    # for good, or went with a worker): it does not hold the user's next one up.
    alive = timezone.now() - timedelta(seconds=settings.TASKS_RUNNING_TIMEOUT)
    if limits.enabled() and (
        MemoryJob.objects.filter(user=user, updated_at__gte=alive)
        .exclude(state__in=(MemoryJob.State.DONE, MemoryJob.State.FAILED))
        .exists()
    ):
        raise MemoryBusy(
            "an import or a reset is already under way", limit="MEMORY_BULK_RATE", retry_after=5
        )
    limits.check_rate(request, "MEMORY_BULK_RATE")
    job = MemoryJob.objects.create(
        user=user, kind=kind, records=records or [], total=len(records or [])
    )
    # At once (the job's row is there: views run in autocommit); a task whose job was
    # rolled back meanwhile finds none and ends.
    run_job.enqueue(job.pk)
    return job


def start_import(*, user, request, data: bytes) -> MemoryJob:
    """Check the file now (MemoryInputError names what is wrong), import it in the background."""
    records = transfer.read_export(data)
    return _start(user=user, request=request, kind=MemoryJob.Kind.IMPORT, records=records)


def start_reset(*, user, request) -> MemoryJob:
    return _start(user=user, request=request, kind=MemoryJob.Kind.RESET)


def status(job: MemoryJob) -> dict:
    """What /api/memory/jobs/<id> answers."""
    return {
        "id": job.pk,
        "kind": job.kind,
        "state": job.state,
        "done": job.done,
        "total": job.total,
        "outcome": job.outcome,
        "error": job.error,
    }


@task()
def run_job(job_id: int) -> dict:
    job = MemoryJob.objects.select_related("user").filter(pk=job_id).first()
    if job is None or job.finished:
        return {"skipped": "no such job, or it ended"}
    _update(job, state=MemoryJob.State.RUNNING, done=0)
    try:
        if job.kind == MemoryJob.Kind.IMPORT:
            outcome = _import(job)
        else:
            # As long as a call may take: a reset of 20,000 memories outlasts a batch's.
            deleted = controls.reset_memory(user=job.user, timeout=check.MAX_TIMEOUT)
            outcome = {"deleted": deleted}
    except MemoryServiceError as exc:
        logger.warning("memory job %s (%s) stopped: %s (%s)", job.pk, job.kind, exc, exc.detail)
        _update(job, state=MemoryJob.State.FAILED, error=exc.message[:500], records=[])
        return {"failed": exc.message}
    _update(job, state=MemoryJob.State.DONE, outcome=outcome, records=[])
    logger.info("memory job %s (%s) of user %s done: %s", job.pk, job.kind, job.user_id, outcome)
    return outcome


def _update(job: MemoryJob, **fields) -> None:
    # update() leaves auto_now alone: updated_at says the job is moving.
    MemoryJob.objects.filter(pk=job.pk).update(updated_at=timezone.now(), **fields)


def _import(job: MemoryJob) -> dict:
    outcome = {"restored": 0, "duplicates": 0, "expired": 0}
    records = job.records
    for start in range(0, len(records), transfer.BATCH):
        batch = records[start : start + transfer.BATCH]
        done = services.restore_memories(
            user=job.user, memories=batch, timeout=settings.MEMORY_TASK_TIMEOUT
        )
        for name in outcome:
            outcome[name] += done.get(name, 0)
        _update(job, done=start + len(batch), outcome=outcome)
    return outcome
