"""The review inbox: what learning would store, with the user's say over it.

Extraction hands the facts it would write to `keep` (one call, memory/learning/extraction.py):
- a fact the user rejected before (the same statement, however it is worded again) is
  dropped: never proposed again;
- with "Ask me before keeping what I say" on (MemorySettings.review_learning), the facts
  wait in the inbox (ReviewedFact, state waiting) with the message they came from: nothing
  reaches the memory server, so nothing waiting is ever recalled;
- otherwise they are written (add_thoughts) and listed as learnt today, with the same actions.

Accept writes a waiting fact (or confirms a kept one); edit writes the user's wording
(a kept fact is edited in place, with history); reject drops a waiting fact or deletes a
kept one, and remembers the statement.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime, time, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from ikario_rag import secrets
from ikario_rag.facts import Statement
from memory.client import services
from memory.client.errors import MemoryNotFound
from memory.learning import profile
from memory.learning.health import same_fact
from memory.models import MemorySettings, ReviewedFact

State = ReviewedFact.State
# Rejected statements compared with a new fact (the newest): bounded work per fact.
REJECTED_COMPARED = 500


def same_statement(new: str, old: str) -> bool:
    """The one "same fact" comparison the inbox uses (the shared rule: swap it here)."""
    return same_fact(Statement(new), Statement(old))


def rejected_before(user, content: str) -> bool:
    rejected = ReviewedFact.objects.filter(user=user, state=State.REJECTED).order_by("-id")
    return any(
        same_statement(content, old)
        for old in rejected.values_list("content", flat=True)[:REJECTED_COMPARED]
    )


def keep(*, user, items: list[dict], conversation, said: str) -> dict:
    """What learning would store (add_thoughts items), after the user's say: returns what
    add_thoughts returns ({"created", "updated", ...}; nothing written: zeros)."""
    items = [item for item in items if not rejected_before(user, item["content"])]
    said = secrets.redact(said).text  # what it came from is shown, never a secret in it
    if not items:
        return {"created": 0, "updated": 0, "results": []}
    if MemorySettings.objects.filter(user=user, review_learning=True).exists():
        waiting = ReviewedFact.objects.filter(user=user, state=State.WAITING)
        held = list(waiting.values_list("content", flat=True))
        for item in items:
            if any(same_statement(item["content"], old) for old in held):
                continue  # proposed already: once is enough
            ReviewedFact.objects.create(
                user=user,
                state=State.WAITING,
                content=item["content"],
                context=item.get("context") or {},
                said=said,
                conversation=conversation,
            )
            held.append(item["content"])
        return {"created": 0, "updated": 0, "results": []}
    stored = services.add_thoughts(user=user, items=items, timeout=settings.MEMORY_TASK_TIMEOUT)
    # Only today's are listed: older ones are never shown again.
    ReviewedFact.objects.filter(
        user=user, state=State.KEPT, created_at__lt=timezone.now() - timedelta(days=2)
    ).delete()
    for item, result in zip(items, stored.get("results") or [], strict=False):
        if result.get("status") in ("created", "updated"):
            ReviewedFact.objects.create(
                user=user,
                state=State.KEPT,
                content=item["content"],
                context=item.get("context") or {},
                said=said,
                conversation=conversation,
                memory_id=result.get("id") or "",
            )
    return stored


def waiting(user):
    return ReviewedFact.objects.filter(user=user, state=State.WAITING).order_by("id")


def learnt_today(user):
    """Facts learnt without asking since midnight (the user's day), not yet looked at."""
    midnight = timezone.make_aware(datetime.combine(timezone.localdate(), time.min))
    return ReviewedFact.objects.filter(
        user=user, state=State.KEPT, created_at__gte=midnight
    ).order_by("id")


def to_review(user):
    """What the inbox lists: waiting facts, and those learnt today."""
    midnight = timezone.make_aware(datetime.combine(timezone.localdate(), time.min))
    return ReviewedFact.objects.filter(
        Q(state=State.WAITING) | Q(state=State.KEPT, created_at__gte=midnight), user=user
    ).order_by("id")


def accept(fact: ReviewedFact, *, content: str | None = None) -> ReviewedFact:
    """Keep the fact (in the user's wording when edited): a waiting one is written, a kept
    one edited in place (the server keeps the old version in its history)."""
    wording = content if content is not None else fact.content
    if fact.state == State.WAITING:
        stored = services.add_thoughts(
            user=fact.user,
            items=[{"content": wording, "context": fact.context}],
            timeout=settings.MEMORY_TASK_TIMEOUT,
        )
        results = stored.get("results") or [{}]
        fact.memory_id = results[0].get("id") or ""
        if results[0].get("status") in ("created", "updated"):
            profile.facts_changed(user=fact.user, count=1)  # as learning would have
    elif wording != fact.content and fact.memory_id:
        services.update_memory(user=fact.user, memory_id=fact.memory_id, content=wording)
    fact.content = wording
    fact.state = State.ACCEPTED
    fact.save(update_fields=["content", "state", "memory_id"])
    return fact


def reject(fact: ReviewedFact) -> ReviewedFact:
    """Never kept, never proposed again: a kept one is deleted from the memory."""
    if fact.state in (State.KEPT, State.ACCEPTED) and fact.memory_id:
        with suppress(MemoryNotFound):  # deleted meanwhile: rejected all the same
            services.delete_memory(user=fact.user, memory_id=fact.memory_id, reason="rejected")
    fact.state = State.REJECTED
    fact.save(update_fields=["state"])
    return fact
