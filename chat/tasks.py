"""chat's background work: a conversation's summaries, brought up to date after each answer.

`turn_finished` (chat/signals.py) is received here once an answer is complete, and the job
is enqueued when the answer's transaction commits, on Django's Tasks API (the TASKS setting
and the worker beside the app: README, "Background work"). The job is idempotent
(chat/summaries.py stores each summary once), so a retry or a second job for the same
conversation costs at most a model call and stores nothing twice.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django_tasks import task

from chat import summaries
from chat.models import Conversation, Message

logger = logging.getLogger(__name__)


@task()
def summarize_conversation(conversation_id: int) -> int:
    """Make the conversation's missing summaries; returns how many were stored."""
    if not Conversation.objects.filter(pk=conversation_id).exists():
        return 0  # deleted since: nothing to summarise
    return summaries.update_summaries(conversation_id=conversation_id)


def on_turn_finished(sender, *, conversation, message, **kwargs) -> None:
    """turn_finished receiver: summaries after each complete answer, in the background."""
    if message.status != Message.Status.COMPLETE:
        return
    conversation_id = conversation.pk
    transaction.on_commit(lambda: summarize_conversation.enqueue(conversation_id))
