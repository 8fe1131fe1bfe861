"""Which answers had memories put in front of them, read from the retrieval log
(memory_retrievals, written by auto-recall for each user message)."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from chat.models import Message
from memory.models import MemoryRetrieval


def retrieval_for(answer: Message) -> MemoryRetrieval | None:
    """The recall made for this answer: the one for the user message it answers, made
    once the answer had started (a retry's, not the failed attempt's)."""
    asked = (
        Message.objects.filter(
            conversation_id=answer.conversation_id, role=Message.Role.USER, id__lt=answer.pk
        )
        .order_by("-id")
        .first()
    )
    if asked is None:
        return None
    made = MemoryRetrieval.objects.filter(message=asked)
    return (
        made.filter(created_at__gte=answer.created_at).order_by("id").first()
        or made.order_by("-id").first()
    )


def answers_with_recall(conversation_id: int) -> set[int]:
    """The conversation's answers that had memories put in front of them, in one query
    (the chat page asks once for all its answers): an answer's recall is the one made for
    the last user message before it."""
    recalled = MemoryRetrieval.objects.filter(conversation_id=conversation_id).exclude(memories=[])
    return _answers_to(conversation_id, recalled.values("message_id"))


def answers_without_memory(conversation_id: int) -> set[int]:
    """The conversation's answers given while memory was unavailable: their message's
    recall failed (and no retry's worked), in one query."""
    retrievals = MemoryRetrieval.objects.filter(conversation_id=conversation_id)
    failed = retrievals.exclude(error="").exclude(
        message_id__in=retrievals.filter(error="").values("message_id")
    )
    return _answers_to(conversation_id, failed.values("message_id"))


def _answers_to(conversation_id: int, asked_ids) -> set[int]:
    """The answers whose last user message before them is one of `asked_ids`."""
    asked = (
        Message.objects.filter(
            conversation_id=OuterRef("conversation_id"),
            role=Message.Role.USER,
            id__lt=OuterRef("pk"),
        )
        .order_by("-id")
        .values("id")[:1]
    )
    return set(
        Message.objects.filter(conversation_id=conversation_id, role=Message.Role.ASSISTANT)
        .annotate(asked=Subquery(asked))
        .filter(asked__in=asked_ids)
        .values_list("id", flat=True)
    )
