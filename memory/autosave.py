"""Auto-save (seed 000 feature 6): after each answer, a conversation of more than
MEMORY_AUTOSAVE_MIN_MESSAGES messages, or pinned, is saved in the background.

chat sends `turn_finished` once an answer is saved; this receiver (connected in
MemoryConfig.ready) decides, in a few queries, whether the conversation qualifies and, if
so, enqueues the `save_conversation` task with transaction.on_commit, so the job exists
once the answer does and never before. chat also sends `conversation_pinned`: pinning
saves the answered exchanges at once. The job saves only the exchanges not saved yet
(memory/backup.py), silently: nothing is shown to the user, the log says what was saved.
Off when memory is: MCP_MEMORY_ENABLED, the user's memory_enabled, the conversation's
enable_memory, an incognito conversation; and when the user paused memory or turned
"save conversations to memory" off (memory/controls.py). Checked again by the job, which
may run later; after a reset it saves only what was said since.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django_tasks import task

from chat.models import Conversation, ConversationSettings, Message
from memory import backup
from memory.errors import MemoryDisabled, MemoryInputError, MemoryPaused
from memory.models import MemorySettings

logger = logging.getLogger("memory.autosave")


def memory_on_for(conversation: Conversation) -> bool:
    """Memory is on for this conversation: globally, for its owner and for itself."""
    if not settings.MCP_MEMORY_ENABLED or conversation.incognito:
        return False
    if ConversationSettings.objects.filter(conversation=conversation, enable_memory=False).exists():
        return False
    return not MemorySettings.turned_off(conversation.user_id)


def autosave_on_for(conversation: Conversation) -> bool:
    """The owner lets conversations be saved: not paused, "save conversations" on."""
    return (
        not MemorySettings.objects.filter(user_id=conversation.user_id)
        .filter(Q(paused=True) | Q(autosave=False))
        .exists()
    )


def qualifies(conversation: Conversation) -> bool:
    """Pinned, or more than MEMORY_AUTOSAVE_MIN_MESSAGES messages (failed answers aside)."""
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
    if conversation is None or not memory_on_for(conversation):
        return
    if not autosave_on_for(conversation) or not qualifies(conversation):
        return
    transaction.on_commit(lambda: enqueue_save(conversation.pk))


def on_conversation_pinned(sender, *, conversation, **kwargs) -> None:
    """conversation_pinned receiver: a pinned conversation qualifies at once, so its
    answered exchanges are saved now rather than after its next answer."""
    if not settings.MEMORY_AUTOSAVE or not memory_on_for(conversation):
        return
    answered = (
        Message.objects.filter(conversation=conversation, role=Message.Role.ASSISTANT)
        .filter(status__in=(Message.Status.COMPLETE, Message.Status.STOPPED))
        .exclude(content="")
        .exists()
    )
    if answered:
        transaction.on_commit(lambda: enqueue_save(conversation.pk))


def enqueue_save(conversation_id: int) -> None:
    result = save_conversation.enqueue(conversation_id)
    logger.info("auto-save of conversation %s queued (job %s)", conversation_id, result.id)


@task()
def save_conversation(conversation_id: int) -> dict:
    """The background save: the conversation's new exchanges, if memory is still on.

    A failed memory call raises, and the worker tries again later (memory/worker.py);
    what was saved before it stays recorded, so the next attempt goes on from there.
    """
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if conversation is None:
        return {"saved": 0, "skipped": "the conversation was deleted"}
    if not memory_on_for(conversation):
        return {"saved": 0, "skipped": "memory is off"}
    if not autosave_on_for(conversation):
        return {"saved": 0, "skipped": "paused, or saving conversations is off"}
    reset_at = (
        MemorySettings.objects.filter(user_id=conversation.user_id)
        .values_list("reset_at", flat=True)
        .first()
    )
    try:
        result = backup.backup_conversation(
            conversation, timeout=settings.MEMORY_TASK_TIMEOUT, since=reset_at, background=True
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
            conversation_id,
            result.memories,
        )
    return {"saved": result.saved, "memories": result.memories, "total": result.total}
