"""An import of past chats as a background job: the memory page's upload and
`manage.py import_history` start it; it runs in the worker as a MemoryJob of kind
"history" (memory/client/jobs.py's rules: one job under way per user, its progress polled).

It goes in three steps, each shown on /memory:
1. checking: the whole export is read once (a stream) and refused, with what is wrong,
   before anything is stored;
2. storing: each chat becomes a past chat (storing.py), a memory is written as a fact;
3. learning: the same learning as a live chat's (memory/learning/conversations.py's task),
   on each chat of that source, oldest first, LEARN_SLICE chats per task: between slices
   the job goes back in the queue behind what others asked for, so one user's years of
   chats do not hold up anyone's live learning.
The job ends with a summary: chats, facts learnt, secrets kept out.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

from django.conf import settings
from django.db.models import Q
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _
from django_tasks import task

from chat.models import Conversation
from memory.client import jobs
from memory.client.errors import MemoryServiceError
from memory.history import opening, storing
from memory.history.checks import Damaged
from memory.learning import conversations
from memory.models import MemoryJob

logger = logging.getLogger("memory.history.importing")

LEARN_SLICE = 25  # chats learnt per task before the job queues itself again
PROGRESS_EVERY = 50  # chats between two progress writes


def holding_dir() -> Path:
    return Path(settings.MEMORY_HISTORY_DIR)


def receive(upload) -> Path:
    """An uploaded export, written to the holding folder chunk by chunk (never whole in
    memory); Damaged past MEMORY_HISTORY_MAX_BYTES."""
    folder = holding_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4().hex}.upload"
    written = 0
    with path.open("wb") as out:
        for chunk in upload.chunks():
            written += len(chunk)
            if written > opening.most_bytes():
                out.close()
                path.unlink(missing_ok=True)
                mb = opening.most_bytes() // (1024 * 1024)
                raise Damaged(_("is larger than %(mb)d MB") % {"mb": mb})
            out.write(chunk)
    return path


def start(*, user, request, path: Path, queued: bool = True) -> MemoryJob:
    """The export sniffed now (Damaged says what is wrong), imported by a job."""
    try:
        opening.open_export(path)
    except Damaged:
        _let_go(str(path))
        raise
    try:
        return jobs.start(
            user=user,
            request=request,
            kind=MemoryJob.Kind.HISTORY,
            run=run_history,
            file=str(path),
            queued=queued,
        )
    except MemoryServiceError:
        _let_go(str(path))
        raise


@task()
def run_history(job_id: int) -> dict:
    """One step of the job; queued again, behind others' work, until it ends."""
    if advance(job_id):
        return {"job": job_id, "finished": True}
    options = {}
    if run_history.get_backend().supports_priority:
        options["priority"] = conversations.LEARN_PRIORITY
    run_history.using(**options).enqueue(job_id)
    return {"job": job_id, "finished": False}


def advance(job_id: int) -> bool:
    """Take the job one step further; True once it has ended (done or failed)."""
    job = MemoryJob.objects.select_related("user").filter(pk=job_id).first()
    if job is None or job.finished:
        return True
    try:
        if job.outcome.get("phase") != "learning":
            _read_and_store(job)
            return False
        if _learn(job):
            _end(job, MemoryJob.State.DONE)
            return True
        return False
    except Damaged as exc:
        _end(job, MemoryJob.State.FAILED, error=exc.reason[:500])
    except MemoryServiceError as exc:
        logger.warning("history import %s stopped: %s (%s)", job.pk, exc, exc.detail)
        _end(job, MemoryJob.State.FAILED, error=exc.message[:500])
    except OSError:
        logger.exception("history import %s: its file could not be read", job.pk)
        _end(job, MemoryJob.State.FAILED, error=_("the file could not be read"))
    return True


def _read_and_store(job: MemoryJob) -> None:
    export = opening.open_export(job.file)
    outcome = {"phase": "checking", "source": export.kind, "chats": 0, "memories_read": 0}
    job.outcome = outcome  # what a failure half-way reports
    jobs.update(job, state=MemoryJob.State.RUNNING, done=0, total=0, outcome=outcome)
    for _chat in opening.chats(export):  # read whole once: refused before anything is stored
        outcome["chats"] += 1
        if outcome["chats"] % PROGRESS_EVERY == 0:
            jobs.update(job, done=outcome["chats"], outcome=outcome)
    outcome["memories_read"] = sum(1 for _memory in opening.memories(export))
    outcome.update(phase="storing", added=0, already=0, secrets=0, memories=0, duplicates=0)
    jobs.update(job, done=0, total=outcome["chats"], outcome=outcome)
    for n, chat in enumerate(opening.chats(export), 1):
        stored = storing.store_chat(user=job.user, chat=chat)
        outcome["added" if stored else "already"] += 1
        outcome["secrets"] += storing.secrets_in(chat)
        if n % PROGRESS_EVERY == 0:
            jobs.update(job, done=n, outcome=outcome)
    _store_memories(job, export, outcome)
    outcome.update(phase="learning", learnt=0, facts=0, after=None)
    jobs.update(job, done=0, outcome=outcome)


def _store_memories(job: MemoryJob, export, outcome: dict) -> None:
    batch = []
    for memory in opening.memories(export):
        batch.append(memory)
        if len(batch) == storing.MEMORY_BATCH:
            _count(outcome, storing.store_memories(user=job.user, memories=batch))
            batch = []
    if batch:
        _count(outcome, storing.store_memories(user=job.user, memories=batch))


def _count(outcome: dict, done: dict) -> None:
    outcome["memories"] += done["created"]
    outcome["duplicates"] += done["duplicates"]
    outcome["secrets"] += done["secrets"]


def _learn(job: MemoryJob) -> bool:
    """Learn from the next LEARN_SLICE chats of the source, oldest first; True when none
    is left."""
    outcome = dict(job.outcome)
    chats = Conversation.objects.filter(user=job.user, source=outcome["source"])
    after = outcome.get("after")
    if after:
        chats = chats.filter(pk__in=_after(chats, after))
    ids = list(chats.order_by("created_at", "id").values_list("id", "created_at")[:LEARN_SLICE])
    for pk, created in ids:
        learnt = conversations.save_conversation.func(pk)
        outcome["facts"] += learnt.get("changed", 0)  # new or changed: restatements are not
        outcome["learnt"] += 1
        outcome["after"] = [created.isoformat(), pk]
    jobs.update(job, done=min(outcome["learnt"], job.total), outcome=outcome)
    job.outcome = outcome
    return len(ids) < LEARN_SLICE


def _after(chats, after: list):
    """The chats after the last one learnt, in (created_at, id) order."""
    at, pk = parse_datetime(after[0]), after[1]
    return chats.filter(Q(created_at__gt=at) | Q(created_at=at, id__gt=pk)).values("id")


def _end(job: MemoryJob, state: str, *, error: str = "") -> None:
    outcome = {k: v for k, v in job.outcome.items() if k != "after"}
    outcome["phase"] = "done" if state == MemoryJob.State.DONE else outcome.get("phase")
    jobs.update(job, state=state, error=error, outcome=outcome)
    _let_go(job.file)
    if state == MemoryJob.State.DONE:
        logger.info("history import %s of user %s done: %s", job.pk, job.user_id, outcome)


def _let_go(file: str) -> None:
    """An uploaded export is deleted once read; an operator's own file is left alone."""
    path = Path(file)
    if file and path.parent.resolve() == holding_dir().resolve():
        path.unlink(missing_ok=True)
