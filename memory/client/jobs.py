"""Imports and resets as background jobs: the request answers 202 at once with where to
follow the job, and the job goes on in the worker (memory/worker/database.py), one batch at a time.

An import of thousands of memories or a reset of tens of thousands outlasts a request's
memory call (MCP_CALL_TIMEOUT): answered "no answer within 10 s" while the server went on
deleting or storing, the user was told it failed when it had not. Now the view checks what
it can at once (the confirmation, the file: refused whole with what is wrong and where),
records a MemoryJob and enqueues `run_job`; the memory page shows the job's progress, and
/api/memory/jobs/<id> says where it is (state, done of total, outcome, error).

A user's jobs run one at a time (another is refused with 429 while one is queued or
running: a unique constraint on the user's job under way, so requests arriving together
cannot both get in), each batch a call of its own in the worker's process, as background work
(the memory server serves recall searches first: ikario_rag/shares.py). A job stopped
half-way (memory unavailable) says so, with what it did: importing the same file again
adds only what is missing. A job whose worker died runs again from the start (both kinds
are idempotent).
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext
from django_tasks import task

from memory.client import controls, limits, services, transfer
from memory.client import validation as check
from memory.client.errors import MemoryBusy, MemoryServiceError
from memory.models import MemoryJob

logger = logging.getLogger("memory.client.jobs")
UNDER_WAY = (MemoryJob.State.QUEUED, MemoryJob.State.RUNNING)


def _start(
    *,
    user,
    request,
    kind: str,
    records: list | None = None,
    left_out: int = 0,
    run=None,
    file: str = "",
    queued: bool = True,
) -> MemoryJob:
    """The job recorded and `run` (run_job unless said) enqueued with its id. No request:
    an operator's command, which the user's rate does not count."""
    _let_go_of_stalled(user)
    if _under_way(user).exists():  # refused before the rate counts it
        raise _busy()
    if request is not None:
        limits.check_rate(request, "MEMORY_BULK_RATE")
    try:
        # The database holds the promise (a unique constraint on the user's job under way):
        # of requests arriving together, one row is made, the others are refused.
        with transaction.atomic():
            job = MemoryJob.objects.create(
                user=user,
                kind=kind,
                records=records or [],
                total=len(records or []) + left_out,
                outcome={"private_only": left_out} if left_out else {},
                file=file,
            )
    except IntegrityError:
        raise _busy() from None
    # At once (the job's row is there: views run in autocommit); a task whose job was
    # rolled back meanwhile finds none and ends.
    if queued:
        (run or run_job).enqueue(job.pk)
    return job


def start(*, user, request, kind: str, run, file: str = "", queued: bool = True) -> MemoryJob:
    """Another wing's job (memory/history/ imports), with this one's rules: one under way
    per user, the bulk rate, progress and status read the same way. Not `queued`: the
    caller runs it (an operator's command)."""
    return _start(user=user, request=request, kind=kind, run=run, file=file, queued=queued)


def update(job: MemoryJob, **fields) -> None:
    """A job's progress, recorded (and that it is moving)."""
    _update(job, **fields)


def _under_way(user):
    return MemoryJob.objects.filter(user=user, state__in=UNDER_WAY)


def _busy() -> MemoryBusy:
    return MemoryBusy(
        "an import or a reset is already under way", limit="MEMORY_BULK_RATE", retry_after=5
    )


def _let_go_of_stalled(user) -> None:
    """A job that has not moved for TASKS_RUNNING_TIMEOUT is not under way (its task failed
    for good, or went with a worker): it ends as failed and does not hold the next one up."""
    alive = timezone.now() - timedelta(seconds=settings.TASKS_RUNNING_TIMEOUT)
    _under_way(user).filter(updated_at__lt=alive).update(
        state=MemoryJob.State.FAILED, error=gettext("Stopped: it had not moved for a long time.")
    )


def start_import(*, user, request, data: bytes) -> MemoryJob:
    """Check the file now (MemoryInputError names what is wrong), import it in the background."""
    records = transfer.read_export(data)
    kept = [record for record in records if not transfer.private_only(record)]
    return _start(
        user=user,
        request=request,
        kind=MemoryJob.Kind.IMPORT,
        records=kept,
        left_out=len(records) - len(kept),
    )


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
    left_out = job.outcome.get("private_only", 0)  # only <private> text: never sent
    counted = ("restored", "duplicates", "expired")
    outcome = {**dict.fromkeys(counted, 0), "private_only": left_out}
    records = job.records
    for start in range(0, len(records), transfer.BATCH):
        batch = records[start : start + transfer.BATCH]
        done = services.restore_memories(
            user=job.user, memories=batch, timeout=settings.MEMORY_TASK_TIMEOUT
        )
        for name in counted:
            outcome[name] += done.get(name, 0)
        _update(job, done=left_out + start + len(batch), outcome=outcome)
    return outcome
