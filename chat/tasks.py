"""chat's background work: a conversation's summaries, brought up to date after each answer.

`turn_finished` (chat/signals.py) is received here once an answer is complete, and, once
the conversation is long enough to be summarised at all (more than CHAT_SUMMARY_FOLD_CHARS
characters), the job is enqueued when the answer's transaction commits, on Django's Tasks
API (the TASKS setting and the worker beside the app: docs/RUNNING.md, "Background work"). The
job is idempotent (chat/summaries.py stores each summary once), so a retry or a second job
for the same conversation costs at most a model call and stores nothing twice.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.db.models import Sum
from django.db.models.functions import Length
from django_tasks import task

from chat import summaries
from chat.models import Conversation, Message
from chat.signals import log_failed_listeners, summaries_made

logger = logging.getLogger(__name__)


@task()
def summarize_conversation(conversation_id: int) -> int:
    """Make the conversation's missing summaries; returns how many were stored."""
    if not Conversation.objects.filter(pk=conversation_id).exists():
        return 0  # deleted since: nothing to summarise
    stored = summaries.update_summaries(conversation_id=conversation_id)
    sent = summaries_made.send_robust(sender=Conversation, conversation_id=conversation_id)
    log_failed_listeners("summaries_made", sent)
    return stored


def on_turn_finished(sender, *, conversation, message, **kwargs) -> None:
    """turn_finished receiver: summaries after each complete answer, in the background,
    once the conversation holds more than CHAT_SUMMARY_FOLD_CHARS characters (the first
    fold's threshold): a shorter one is always sent whole, and needs no model call."""
    if message.status != Message.Status.COMPLETE or conversation.incognito:
        return  # an incognito chat keeps no summaries
    size = Message.objects.filter(conversation_id=conversation.pk).aggregate(
        chars=Sum(Length("content"))
    )["chars"]
    if (size or 0) <= settings.CHAT_SUMMARY_FOLD_CHARS:
        return
    conversation_id = conversation.pk
    transaction.on_commit(lambda: summarize_conversation.enqueue(conversation_id))
