"""Past chats and memories, stored: a chat becomes the user's Conversation (its source and the
export's id for it, dated as it was had), its messages dated as they were said; a memory is
written through the memory's dedup with where it came from.

Idempotent: a chat already imported (the same source and id, a unique constraint) is left as
it is; a memory already there is a duplicate to the memory's own dedup.
"""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, Value, When

from chat.models import Conversation, Message
from ikario_rag import secrets
from memory.client import services
from memory.history.past import USER, PastChat, PastMemory

ROLES = {USER: Message.Role.USER}
UNTITLED = "Imported chat"
MEMORY_BATCH = 100  # memories per add_thoughts call
DATE_ROWS = 400  # messages dated per UPDATE (SQLite bounds a statement's parameters)


def store_chat(*, user, chat: PastChat) -> Conversation | None:
    """The chat as the user's conversation, or None when it was imported before (or says
    nothing)."""
    if not chat.messages:
        return None
    try:
        with transaction.atomic():
            conversation = Conversation.objects.create(
                user=user,
                title=chat.title or UNTITLED,
                source=chat.source,
                source_id=chat.source_id,
            )
            rows = Message.objects.bulk_create(
                Message(
                    conversation=conversation,
                    role=ROLES.get(m.role, Message.Role.ASSISTANT),
                    content=m.text,
                )
                for m in chat.messages
            )
            _date(rows, chat)
            Conversation.objects.filter(pk=conversation.pk).update(
                created_at=chat.created, updated_at=chat.updated
            )
    except IntegrityError:
        return None
    return conversation


def _date(rows: list[Message], chat: PastChat) -> None:
    """auto_now_add dated them now: each dated as it was said, a statement per DATE_ROWS."""
    pairs = list(zip(rows, chat.messages, strict=True))
    for start in range(0, len(pairs), DATE_ROWS):
        some = pairs[start : start + DATE_ROWS]
        Message.objects.filter(pk__in=[r.pk for r, _ in some]).update(
            created_at=Case(*(When(pk=r.pk, then=Value(m.at)) for r, m in some))
        )


def secrets_in(chat: PastChat) -> int:
    """The secrets the user's words hold: never kept in memory (ikario_rag/secrets.py)."""
    return sum(len(secrets.find(m.text)) for m in chat.messages if m.role == USER)


def memory_source(memory: PastMemory) -> str:
    """The source a pasted memory is stored with: "imported:<assistant>" (display/sources.py)."""
    return f"imported:{memory.source}"


def store_memories(*, user, memories: list[PastMemory]) -> dict:
    """Write the memories as facts, dated as saved; {"created", "duplicates", "secrets"}."""
    outcome = {"created": 0, "duplicates": 0, "secrets": 0}
    for start in range(0, len(memories), MEMORY_BATCH):
        batch = memories[start : start + MEMORY_BATCH]
        items = []
        for memory in batch:
            outcome["secrets"] += len(secrets.find(memory.text))
            context = {"kind": "fact", "category": "thematique", "source": memory_source(memory)}
            if memory.saved:
                context["date"] = memory.saved.isoformat()
            items.append({"content": memory.text, "context": context})
        done = services.add_thoughts(user=user, items=items, timeout=settings.MEMORY_TASK_TIMEOUT)
        outcome["created"] += done.get("created", 0) + done.get("updated", 0)
        outcome["duplicates"] += done.get("duplicates", 0)
    return outcome
