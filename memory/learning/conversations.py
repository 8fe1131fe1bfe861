"""Learning from conversations: every conversation is read for facts once it pauses, and
an important one is also saved whole, as a backup.

chat sends `turn_finished` once an answer is saved; this receiver (connected in
MemoryConfig.ready) schedules `save_conversation` MEMORY_LEARN_DELAY seconds later
with the Tasks API's `run_after`, coalesced: a PendingLearning row per conversation says a
task is pending, so a later turn only pushes its `learn_after` back, and a task woken before
then sleeps again until then (one pending task per conversation, however many turns). The
task reads the exchanges not read yet for facts (memory/learning/extraction.py: the model with a
key, the rules of memory/learning/offline_facts.py without) and, for a pinned conversation or one of
more than MEMORY_AUTOSAVE_MIN_MESSAGES messages, saves the exchanges not saved yet
(memory/learning/backup.py). chat also sends `conversation_pinned`: pinning learns and saves at
once. Silent: nothing is shown to the user, the log says what was learnt and saved.

Off when memory is (memory/learning/kept_out.py's rule): MCP_MEMORY_ENABLED, the user's
memory_enabled, the conversation's enable_memory, an incognito conversation, memory
paused; what was said while it was paused or off is never read. "Save conversations to
memory" off (MemorySettings.autosave) stops the backup only. Checked again by the task,
which runs later; after a reset it reads and saves only what was said since.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import TaskResultStatus, task
from django_tasks_db.models import DBTaskResult

from chat.models import Conversation, Message
from memory.client import controls
from memory.client.errors import MemoryDisabled, MemoryInputError, MemoryPaused
from memory.learning import backup, extraction
from memory.models import LearntExchange, MemorySettings, PendingLearning

logger = logging.getLogger("memory.learning.conversations")

# The worker runs waiting jobs by priority (memory/worker/database.py): a conversation due a
# save (pinned, or long enough to be backed up) first, then what the user started (imports,
# resets, notes syncs: 0), then learning from the other conversations. So learning never
# starves a save, however many wait.
SAVE_PRIORITY = 10
LEARN_PRIORITY = -10
# Seconds a pending row may stay unqueued before the sweep queues it: between a turn's
# commit and its own enqueue, the row is not queued yet.
UNQUEUED_GRACE = 30


def memory_on_for(conversation: Conversation) -> bool:
    """Memory is on for this conversation (paused perhaps): controls.memory_off_for."""
    return controls.memory_off_for(conversation=conversation) not in controls.SHUT


def autosave_on_for(conversation: Conversation) -> bool:
    """The owner lets conversations be saved: not paused, "save conversations" on."""
    return (
        not MemorySettings.objects.filter(user_id=conversation.user_id)
        .filter(Q(paused=True) | Q(autosave=False))
        .exists()
    )


def qualifies(conversation: Conversation) -> bool:
    """Worth a backup: pinned, or more than MEMORY_AUTOSAVE_MIN_MESSAGES messages (failed
    answers aside)."""
    if conversation.pinned:
        return True
    said = (
        Message.objects.filter(conversation=conversation)
        .exclude(content="")
        .exclude(status=Message.Status.ERROR)
        .count()
    )
    return said > settings.MEMORY_AUTOSAVE_MIN_MESSAGES


def on_turn_finished(sender, *, conversation, message, **kwargs) -> None:
    """turn_finished receiver (sync: the signal runs it in a thread, with the ORM's
    connection, when sent from the async turn)."""
    if not settings.MEMORY_AUTOSAVE or message.role != Message.Role.ASSISTANT:
        return
    if message.status not in (Message.Status.COMPLETE, Message.Status.STOPPED):
        return
    # The sidebar's pin may have changed since the turn loaded its copy.
    conversation = Conversation.objects.filter(pk=conversation.pk).first()
    if conversation is None or controls.memory_off_for(conversation=conversation):
        return  # off, or paused
    learn_later(conversation.pk, delay=settings.MEMORY_LEARN_DELAY)


def on_conversation_pinned(sender, *, conversation, **kwargs) -> None:
    """conversation_pinned receiver: a pinned conversation is saved now rather than after
    its next answer."""
    if not settings.MEMORY_AUTOSAVE or not memory_on_for(conversation):
        return
    answered = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .filter(status__in=(Message.Status.COMPLETE, Message.Status.STOPPED))
        .exclude(content="")
        .exists()
    )
    if answered:
        learn_later(conversation.pk, delay=0)


def learn_later(conversation_id: int, *, delay: float) -> None:
    """Have the conversation learnt from `delay` seconds from now: its pending task put
    off until then, or one enqueued (once the caller's transaction commits) when none is
    pending or the pending one would run later than asked."""
    at = timezone.now() + timedelta(seconds=max(delay, 0))
    with transaction.atomic():
        try:
            with transaction.atomic():
                PendingLearning.objects.create(conversation_id=conversation_id, learn_after=at)
            enqueue = True
        except IntegrityError:  # one is pending: it waits for this turn too
            pending = PendingLearning.objects.select_for_update().get(
                conversation_id=conversation_id
            )
            enqueue = at < pending.learn_after or not pending.queued
            pending.learn_after = at
            pending.save(update_fields=["learn_after"])
    if enqueue:
        transaction.on_commit(lambda: _enqueue(conversation_id, at))
    else:  # its task waits already: a pin made since moves it ahead of the learning
        transaction.on_commit(lambda: _hurry(conversation_id))


def on_exchange_saved(sender, *, instance, created: bool, **kwargs) -> None:
    """post_save of SavedExchange: an exchange saved by the Save button, the admin or the
    backfill, and not read yet, has its conversation learnt from."""
    if not created or not instance.memory_ids or not extraction.extractor():
        return
    if LearntExchange.objects.filter(answer_id=instance.answer_id).exists():
        return
    learn_later(instance.conversation_id, delay=0)


def enqueue_save(conversation_id: int) -> None:
    """Learn from and save the conversation now (coalesced with a pending task)."""
    learn_later(conversation_id, delay=0)


def _enqueue(conversation_id: int, at) -> None:
    """The conversation's task queued for `at`, its pending row marked queued. A queue that
    cannot be reached is logged, not raised: the turn that ended is saved, and its learning
    is queued by the next turn or the workers' sweep (`queue_unqueued`)."""
    options = {"run_after": at, "priority": _priority(conversation_id)}
    try:
        result = save_conversation.using(**options).enqueue(conversation_id)
    except Exception as exc:
        logger.warning(
            "learning from conversation %s not queued (%s: %s): queued again later",
            conversation_id,
            type(exc).__name__,
            exc,
        )
        try:
            PendingLearning.objects.filter(conversation_id=conversation_id).update(queued=False)
        except Exception:  # the database is away too: a new row is unqueued already
            logger.debug("could not mark conversation %s unqueued", conversation_id)
        return
    PendingLearning.objects.filter(conversation_id=conversation_id).update(queued=True)
    logger.info(
        "learning from conversation %s queued for %s (job %s)",
        conversation_id,
        at.isoformat(timespec="seconds"),
        result.id,
    )


def _priority(conversation_id: int) -> int:
    conversation = Conversation.objects.filter(pk=conversation_id).first()
    if conversation and autosave_on_for(conversation) and qualifies(conversation):
        return SAVE_PRIORITY
    return LEARN_PRIORITY


def _hurry(conversation_id: int) -> None:
    """The conversation's waiting task gets the priority it is due now (a pinned one, a
    save's): raised in the queue's row, not queued twice (two runs at once would race)."""
    priority = _priority(conversation_id)
    waiting = DBTaskResult.objects.filter(
        status=TaskResultStatus.READY,
        task_path=save_conversation.module_path,
        args_kwargs={"args": [conversation_id], "kwargs": {}},
        priority__lt=priority,
    )
    waiting.update(priority=priority)


def queue_unqueued() -> int:
    """Queue the learning of every conversation whose task never reached the queue (and
    whose time has come, so a turn's own enqueue is not raced): the workers call it."""
    due = timezone.now() - timedelta(seconds=UNQUEUED_GRACE)
    unqueued = PendingLearning.objects.filter(queued=False, learn_after__lt=due)
    found = 0
    for conversation_id, at in unqueued.values_list("conversation_id", "learn_after"):
        _enqueue(conversation_id, at)
        found += 1
    return found


@task()
def save_conversation(conversation_id: int) -> dict:
    """What the conversation teaches into memory, once it has paused: its new exchanges
    read for facts, and its backup brought up to date (idempotent: what is read or saved
    is recorded).

    A failed memory call raises, and the worker tries again later (memory/worker/database.py);
    what was read or saved before it stays recorded, so the next attempt goes on from there.
    """
    pending = PendingLearning.objects.filter(conversation_id=conversation_id)
    gone, _ = pending.filter(learn_after__lte=timezone.now()).delete()
    if not gone:
        later = pending.values_list("learn_after", flat=True).first()
        if later is not None:  # a turn ended since this was planned: wait for its pause
            _enqueue(conversation_id, later)
            return {"learnt": 0, "saved": 0, "skipped": "the conversation went on"}
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if conversation is None:
        return {"learnt": 0, "saved": 0, "skipped": "the conversation was deleted"}
    if controls.memory_off_for(conversation=conversation):
        return {"learnt": 0, "saved": 0, "skipped": "memory is off or paused"}
    reset_at = (
        MemorySettings.objects.filter(user_id=conversation.user_id)
        .values_list("reset_at", flat=True)
        .first()
    )
    if conversation.source:  # imported after any reset, however old its messages' dates
        reset_at = None
    learnt = extraction.learn(conversation, since=reset_at)
    outcome = {
        "learnt": learnt.exchanges,
        "facts": learnt.facts,
        "changed": learnt.changed,
        "echoes": learnt.echoes,
        "saved": 0,
    }
    if autosave_on_for(conversation) and qualifies(conversation):
        outcome.update(_backup(conversation, since=reset_at))
    return outcome


def _backup(conversation: Conversation, *, since) -> dict:
    try:
        result = backup.backup_conversation(
            conversation, timeout=settings.MEMORY_TASK_TIMEOUT, since=since, background=True
        )
    except (MemoryDisabled, MemoryPaused):
        return {"saved": 0, "skipped": "memory is off or paused"}
    except MemoryInputError as exc:
        if exc.field != "conversation":
            raise
        return {"saved": 0, "skipped": "nothing to save"}
    if result.saved:
        logger.info(
            "auto-saved %d exchange(s) of conversation %s (%d memories)",
            result.saved,
            conversation.pk,
            result.memories,
        )
    return {"saved": result.saved, "memories": result.memories, "total": result.total}
