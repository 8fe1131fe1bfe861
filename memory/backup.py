"""Turning a conversation into one memory: the save button, the admin action and
`manage.py memory_backfill` all back up through here, so they store the same thing.
"""

from __future__ import annotations

import re
from collections import Counter

from chat.models import Conversation, Message
from ikario_rag import contract
from memory import services
from memory.errors import MemoryInputError

# Long conversations keep their beginning and their end (the gist and the conclusion)
# within one memory's limit.
MAX_CHARS = contract.MAX_CONTENT
MAX_TAGS = 8
ROLE_LABELS = {Message.Role.USER: "User", Message.Role.ASSISTANT: "Assistant"}
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_STOPWORD_TEXT = """about above after again against because before being below between could doing
    during further having other should their there these those through under until where
    which while would your yours avec alors aussi autre avant cette comme dans depuis elle
    elles encore entre leur mais même nous parce pour quand quel quelle sans sont sous tout
    tous très vous était être fait faire peut plus moins"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def extract_tags(text: str, limit: int = MAX_TAGS) -> list[str]:
    """Seed 000's basic tags: acronyms and capitalised words, long words, repeated words."""
    words = _WORD.findall(text)
    counts = Counter(w.lower() for w in words if len(w) >= 4 and w.lower() not in _STOPWORDS)
    tags: list[str] = []

    def add(tag: str) -> None:
        if tag.lower() not in (t.lower() for t in tags) and len(tags) < limit:
            tags.append(tag)

    for word in words:
        if len(word) >= 2 and word.isupper():
            add(word)  # acronyms: MCP, RAG, API
    for word, count in counts.most_common():
        if count >= 3:
            add(word)
    for word in words:
        if len(word) > 8 and word.lower() not in _STOPWORDS:
            add(word.lower())
    return tags


def conversation_text(conversation: Conversation) -> str:
    messages = conversation.messages.exclude(content="").order_by("created_at", "id")
    lines = [f"Conversation: {conversation.title}"]
    lines += [f"{ROLE_LABELS.get(m.role, m.role)}: {m.content.strip()}" for m in messages]
    text = "\n\n".join(lines)
    if len(text) > MAX_CHARS:
        gap = "\n\n[…]\n\n"
        half = (MAX_CHARS - len(gap)) // 2
        text = text[:half] + gap + text[-half:]
    return text


def backup_conversation(
    conversation: Conversation,
    *,
    category: str = contract.DEFAULT_CATEGORY,
    tags=None,
    timeout=None,
) -> dict:
    """Save the whole conversation as one memory of its owner's and flag it backed up.

    Returns add_thought's result ({"id", "status"}); raises MemoryServiceError subclasses
    (nothing is flagged when the save failed).
    """
    last = conversation.messages.exclude(content="").order_by("-created_at", "-id").first()
    if last is None:
        raise MemoryInputError("conversation", "has no messages to save")
    text = conversation_text(conversation)
    context = {
        "category": category,
        "kind": "conversation",
        "tags": list(tags) if tags else extract_tags(text),
        "date": last.created_at.isoformat(),
        "source": f"conversation:{conversation.pk}",
    }
    result = services.add_thought(
        user=conversation.user, content=text, context=context, timeout=timeout
    )
    # update(): a backup must not bump updated_at and reorder the sidebar.
    Conversation.objects.filter(pk=conversation.pk).update(has_memory_backup=True)
    conversation.has_memory_backup = True
    return result
