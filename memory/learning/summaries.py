"""A conversation's summaries in memory: search finds the turns (level 0) and their
summaries (levels 1+), so that a long conversation's early part is found by meaning.

Auto-save keeps each exchange (kind `conversation`, the turns); this keeps every summary of
chat/summaries.py (levels 1+) as a memory of kind `summary`, source
`conversation:<id>:summary:<summary id>`, dated by the last message it covers, labelled with
its level and the chat's title. chat's summaries job sends `summaries_made`; the
`index_summaries` job then adds what memory does not hold yet (it asks by source, so a
second run adds nothing). The same switches as auto-save decide (memory/learning/conversations.py),
and a summary covering a message said while memory was paused or off is never kept
(memory/learning/kept_out.py). Found by search_memories (Claude's `kinds: ["summary"]`, the memory
page, auto-recall) with the exchanges.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django_tasks import task

from chat.models import Conversation, ConversationSummary, Message
from chat.private import strip_private
from ikario_rag import contract
from memory.client import services
from memory.client.errors import MemoryInputError
from memory.learning import backup, conversations
from memory.models import KeptFromMemory

logger = logging.getLogger("memory.learning.summaries")


def source_of(summary: ConversationSummary) -> str:
    return f"conversation:{summary.conversation_id}:summary:{summary.pk}"


def on_summaries_made(sender, *, conversation_id, **kwargs) -> None:
    """summaries_made receiver: the index job, when memory may keep this conversation."""
    if settings.MEMORY_AUTOSAVE and may_keep(
        Conversation.objects.filter(pk=conversation_id).first()
    ):
        transaction.on_commit(lambda: index_summaries.enqueue(conversation_id))


def may_keep(conversation: Conversation | None) -> bool:
    return bool(
        conversation is not None
        and conversations.memory_on_for(conversation)
        and conversations.autosave_on_for(conversation)
        and conversations.qualifies(conversation)
    )


@task()
def index_summaries(conversation_id: int) -> int:
    """Add the conversation's summaries memory lacks; returns how many were sent."""
    conversation = Conversation.objects.select_related("user").filter(pk=conversation_id).first()
    if not may_keep(conversation):
        return 0
    user = conversation.user
    held = _held_sources(user, conversation_id)
    kept_out = list(
        KeptFromMemory.objects.filter(message__conversation_id=conversation_id).values_list(
            "message_id", flat=True
        )
    )
    wanted = [
        s
        for s in ConversationSummary.objects.filter(conversation_id=conversation_id).order_by(
            "level", "first_message_id"
        )
        if source_of(s) not in held
        and not any(s.first_message_id <= k <= s.last_message_id for k in kept_out)
    ]
    if not wanted:
        return 0
    dates = dict(
        Message.objects.filter(pk__in=[s.last_message_id for s in wanted]).values_list(
            "id", "created_at"
        )
    )
    title = " ".join(strip_private(conversation.title).split())[: contract.MAX_LABEL]
    items = [
        {
            "content": part,
            "context": {
                "kind": "summary",
                "category": "contextuelle",
                "tags": [f"level {s.level}"],
                "subjects": [title] if title else [],
                "source": source_of(s),
                **(
                    {"date": dates[s.last_message_id].isoformat()}
                    if s.last_message_id in dates
                    else {}
                ),
            },
        }
        for s in wanted
        # A summary longer than one memory goes in parts: one too long never blocks the rest.
        for part in backup.parts_of(" ".join(s.text.split()))
    ]
    for start in range(0, len(items), contract.MAX_BATCH):
        _add(user, items[start : start + contract.MAX_BATCH])
    logger.info("conversation %s: %d summaries kept in memory", conversation_id, len(items))
    return len(items)


def _add(user, items: list[dict]) -> None:
    """Add a batch; one the memory refuses for good is logged and left out, the others are
    kept (a refused batch would be sent again, and refused again, at every run)."""
    try:
        services.add_thoughts(user=user, items=items, timeout=settings.MEMORY_TASK_TIMEOUT)
    except MemoryInputError as exc:
        if len(items) == 1:
            source = items[0]["context"]["source"]
            logger.error("summary %s refused by the memory, left out: %s", source, exc)
            return
        for item in items:
            _add(user, [item])


def _held_sources(user, conversation_id: int) -> set[str]:
    """The sources of this conversation's summaries memory holds already."""
    prefix = f"conversation:{conversation_id}:summary:"
    held: set[str] = set()
    offset = 0
    while True:
        page = services.list_memories(
            user=user,
            offset=offset,
            limit=contract.MAX_RESULTS,
            kinds=["summary"],
            source_prefix=prefix,
        )
        memories = page.get("memories") or []
        held.update((m.get("metadata") or {}).get("source") or "" for m in memories)
        offset += len(memories)
        if not memories or offset >= (page.get("total") or 0):
            return held
