"""The person sheet: what Ikario knows about the user, one line per domain of their life,
given to the model on every turn (memory/learning/profile.py stores it, memory/recall/turn.py
sends it).

Built by rules from the stored facts, newest first, with or without a key (the facts are
already the model's sentences when there is one): each fact in its domain
(memory/learning/person/about.py), the domains most important first (who they are, where
they live, their work, their family...), a slot's newest value only (a stale one is never
shown alone), a plan whose date has passed said as past, within a budget (BUDGET_CHARS,
about 1,500 tokens): what does not fit is left to retrieval, least important domains first.
"""

from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone

from chat.prompt_text import without_tags
from memory.learning.person import about

BUDGET_CHARS = 6000  # about 1,500 tokens (prompts.estimate_tokens: 4 characters a token)
PER_DOMAIN = 12
# A plan whose date the user named carries this tag (memory/learning/person/newest.py):
# its `date` is when it happens, not when it was said.
PLANNED = "planned"


def _line(text) -> str:
    return " ".join(without_tags(str(text or "")).split()).rstrip(".")


def when_of(value) -> datetime | None:
    """A stored ISO-8601 date or time, aware (UTC when it says no zone); None when unreadable."""
    try:
        parsed = datetime.fromisoformat(str(value or "").replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _month_year(when: datetime) -> str:
    return when.strftime("%d %B %Y").lstrip("0")


def said_of(fact: dict, now: datetime) -> str:
    """A fact's sentence as the sheet says it: a plan whose date has passed is past."""
    meta = fact.get("metadata") or {}
    text = _line(fact.get("content"))
    when = when_of(meta.get("date"))
    if PLANNED in (meta.get("tags") or []) and when is not None:
        if when < now:
            return f"Past plan (its date, {_month_year(when)}, has passed): {text}"
        return f"{text} (planned for {_month_year(when)})"
    return text


def build(facts: list[dict], *, now: datetime | None = None, budget: int = BUDGET_CHARS) -> str:
    """The sheet of `facts` (records, newest first): "Title: fact; fact" lines, most
    important domain first, at most `budget` characters."""
    now = now or timezone.now()
    by_domain: dict[str, list[str]] = {d.key: [] for d in about.DOMAINS}
    slots: set[str] = set()
    seen: set[str] = set()
    for fact in facts:
        content = _line(fact.get("content"))
        if not content or content.lower() in seen:
            continue
        seen.add(content.lower())
        slot = about.slot_of(content)
        if slot and slot in slots:
            continue  # an older value of a one-valued slot: the newest said it
        if slot:
            slots.add(slot)
        domain = about.domain_of(content, fact.get("metadata") or {})
        if len(by_domain[domain]) < PER_DOMAIN:
            by_domain[domain].append(said_of(fact, now))
    lines: list[str] = []
    used = 0
    for domain in about.DOMAINS:
        head = f"{domain.title}: "
        kept: list[str] = []
        for said in by_domain[domain.key]:
            cost = len(said) + (len(head) + 1 if not kept else 2)
            if used + cost > budget:
                break
            kept.append(said)
            used += cost
        if kept:
            lines.append(head + "; ".join(kept))
    return "\n".join(lines)


def titles() -> tuple[str, ...]:
    """Every heading the sheet writes (in English, as stored)."""
    return tuple(d.title for d in about.DOMAINS)
