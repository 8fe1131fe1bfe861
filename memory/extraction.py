"""Extraction: facts, not transcripts. Each saved exchange becomes atomic facts about the
user, written through ikario_rag's dedup.

With an API key (and MEMORY_EXTRACTION on), every new SavedExchange (auto-save, the save
button, the admin, backfill) enqueues `extract_facts` on commit. The job:

1. looks up the user's stored facts related to the exchange (search_memories, kinds fact,
   preference, goal, self) and shows them to the model as K1..Kn;
2. asks a small model (ANTHROPIC_EXTRACTION_MODEL) for durable, user-specific facts with a
   forced tool call (`record_facts`, a JSON schema: content, kind, subjects, date, and
   `replaces` naming the Kn a changed fact supersedes);
3. writes them with add_thoughts: a restated fact is caught by ikario_rag's dedup (same
   text: duplicate; a refinement: updated), a changed one carries `replaces` so the
   server removes the old one and keeps it in the new one's history;
4. records the exchange as extracted, and tells the profile how many facts changed.

Offline (no key) nothing is extracted; the exchange memories exist all the same. Only
text whose <private> spans were removed is sent (memory/backup.py's Exchange).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_save
from django.utils import timezone
from django_tasks import task

from chat.models import Conversation
from ikario_rag import contract
from ikario_rag.private import strip as strip_private
from memory import autosave, backup, controls, profile, services
from memory.models import SavedExchange

if TYPE_CHECKING:
    import anthropic

logger = logging.getLogger("memory.extraction")

FACT_KINDS = ("self", "preference", "goal", "fact")
# Who the user is is foundational; the rest is a theme of their life.
CATEGORY_OF = {"self": "fondatrice"}
MAX_FACT_CHARS = 500
MAX_SUBJECTS = 6
KNOWN_FACTS = 10
MAX_EXCHANGE_CHARS = 12_000  # what the small model reads of one exchange
TOOL_NAME = "record_facts"

SYSTEM_PROMPT = """You maintain the long-term memory an assistant keeps about its user.
From one exchange between the user and the assistant, record only DURABLE facts that are
SPECIFIC TO THE USER or the people and things in their life:
- self: who the user is (name, job, where they live, family, languages, health that lasts);
- preference: what they like, dislike, or want from the assistant (tone, format, tools);
- goal: what they are working on or aiming at (projects, plans, deadlines);
- fact: anything else durable about their life or their circle ("Their sister Ana lives in Porto").
Do not record: general knowledge, anything the assistant said that the user did not
confirm, small talk, one-off requests ("translate this"), passing states (being tired
today) unless they matter for weeks, or secrets.
Each fact is ONE short sentence in the user's language, about "the user" by name when
known ("Mickael lives in Lyon", "L'utilisateur apprend le piano"). Subjects are 1 to 4
plain lower-case words (people, places, topics). Date: YYYY-MM-DD when the fact says when
it happened or starts, otherwise null.
Known facts are listed with ids K1, K2...: if the exchange restates one unchanged, repeat
it with exactly the same words; if it CHANGES one (they moved, changed jobs, gave up a
plan), write the new fact and set `replaces` to that id. Record nothing when the exchange
teaches nothing durable about the user: an empty list is the usual answer."""

TOOL = {
    "name": TOOL_NAME,
    "description": "Record the durable facts about the user that this exchange teaches.",
    "input_schema": {
        "type": "object",
        "properties": {
            "facts": {
                "type": "array",
                "maxItems": 10,
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "One short sentence."},
                        "kind": {"type": "string", "enum": list(FACT_KINDS)},
                        "subjects": {
                            "type": "array",
                            "items": {"type": "string"},
                            "maxItems": 4,
                        },
                        "date": {
                            "type": ["string", "null"],
                            "description": "YYYY-MM-DD when stated, else null",
                        },
                        "replaces": {
                            "type": ["string", "null"],
                            "description": "The Kn of the known fact this one changes, or null",
                        },
                    },
                    "required": ["content", "kind", "subjects"],
                },
            }
        },
        "required": ["facts"],
    },
}


def enabled() -> bool:
    return bool(settings.MEMORY_EXTRACTION and settings.ANTHROPIC_API_KEY)


def on_exchange_saved(sender, *, instance: SavedExchange, created: bool, **kwargs) -> None:
    """post_save of SavedExchange: a new exchange in memory is worth extracting from."""
    if created and instance.memory_ids and enabled():
        transaction.on_commit(lambda: extract_facts.enqueue(instance.pk))


post_save.connect(on_exchange_saved, sender=SavedExchange, dispatch_uid="memory.extraction")


def client() -> anthropic.Anthropic:
    # Imported here: memory.apps loads this module, and every process start (manage.py)
    # would pay ~2 s for the SDK.
    import anthropic

    return anthropic.Anthropic(
        api_key=settings.ANTHROPIC_API_KEY,
        base_url=settings.ANTHROPIC_BASE_URL or None,
        max_retries=settings.ANTHROPIC_MAX_RETRIES,
        timeout=settings.MEMORY_TASK_TIMEOUT,
    )


def _known_facts(user, query: str) -> list[dict]:
    found = services.search_memories(
        user=user,
        query=query[: contract.MAX_QUERY],
        kinds=list(FACT_KINDS),
        n_results=KNOWN_FACTS,
        timeout=settings.MEMORY_TASK_TIMEOUT,
    )
    return found.get("results") or []


def build_request(exchange: backup.Exchange, known: list[dict]) -> dict:
    """The Messages API request for one exchange (a forced `record_facts` call)."""
    lines = [f"Date of the exchange: {exchange.date.date().isoformat()}", ""]
    if known:
        lines.append("Known facts about the user:")
        for n, record in enumerate(known, 1):
            kind = (record.get("metadata") or {}).get("kind", "fact")
            lines.append(f"K{n} [{kind}] {' '.join(str(record.get('content', '')).split())}")
    else:
        lines.append("Known facts about the user: none yet.")
    lines += ["", "The exchange:", exchange.text()[:MAX_EXCHANGE_CHARS]]
    return {
        "model": settings.ANTHROPIC_EXTRACTION_MODEL,
        "max_tokens": 1024,
        "system": SYSTEM_PROMPT,
        "messages": [{"role": "user", "content": "\n".join(lines)}],
        "tools": [TOOL],
        "tool_choice": {"type": "tool", "name": TOOL_NAME},
    }


def _iso_day(value, default: datetime) -> str:
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.strip()[:10]).date().isoformat()
        except ValueError:
            pass
    return default.isoformat()


def facts_from(message, *, known: list[dict], exchange: backup.Exchange) -> list[dict]:
    """add_thoughts items from the model's `record_facts` call; malformed facts are dropped."""
    called = next(
        (b for b in message.content if b.type == "tool_use" and b.name == TOOL_NAME), None
    )
    facts = (called.input or {}).get("facts") if called is not None else None
    if not isinstance(facts, list):
        return []
    known_ids = {f"K{n}": record.get("id") for n, record in enumerate(known, 1)}
    items: list[dict] = []
    for fact in facts[: settings.MEMORY_EXTRACTION_MAX_FACTS]:
        if not isinstance(fact, dict) or fact.get("kind") not in FACT_KINDS:
            continue
        content = " ".join(strip_private(str(fact.get("content") or "")).split())
        if not content or len(content) > MAX_FACT_CHARS:
            continue
        subjects = fact.get("subjects") if isinstance(fact.get("subjects"), list) else []
        subjects = [
            " ".join(strip_private(str(s)).split()).lower()[: contract.MAX_LABEL]
            for s in subjects[:MAX_SUBJECTS]
        ]
        context = {
            "category": CATEGORY_OF.get(fact["kind"], "thematique"),
            "kind": fact["kind"],
            "subjects": [s for s in subjects if s],
            "date": _iso_day(fact.get("date"), exchange.date),
            "source": exchange.source,
        }
        replaced = known_ids.get(str(fact.get("replaces") or "").strip().upper())
        if replaced:
            context["replaces"] = replaced
        items.append({"content": content, "context": context})
    return items


@task()
def extract_facts(saved_exchange_id: int) -> dict:
    """Turn one saved exchange into facts about its user (idempotent: see the module doc)."""
    saved = SavedExchange.objects.select_related("conversation__user").filter(pk=saved_exchange_id)
    saved = saved.first()
    if saved is None or saved.extracted_at is not None:
        return {"facts": 0, "skipped": "nothing to extract"}
    conversation: Conversation = saved.conversation
    if not enabled() or not autosave.memory_on_for(conversation):
        return {"facts": 0, "skipped": "extraction or memory is off"}
    if controls.saving_paused(conversation.user_id):
        return {"facts": 0, "skipped": "memory is paused"}
    kept_out = backup.exchanges_of(conversation, kept_out=True)
    if any(e.answer_id == saved.answer_id for e in kept_out):
        return {"facts": 0, "skipped": "said while memory was paused or off"}
    exchange = next(
        (e for e in backup.exchanges_of(conversation) if e.answer_id == saved.answer_id), None
    )
    if exchange is None or not exchange.text():
        return {"facts": 0, "skipped": "the exchange is gone"}
    user = conversation.user
    known = _known_facts(user, exchange.text())
    message = client().messages.create(**build_request(exchange, known))
    items = facts_from(message, known=known, exchange=exchange)
    changed = 0
    if items:
        stored = services.add_thoughts(user=user, items=items, timeout=settings.MEMORY_TASK_TIMEOUT)
        changed = stored.get("created", 0) + stored.get("updated", 0)
    SavedExchange.objects.filter(pk=saved.pk).update(extracted_at=timezone.now(), facts=len(items))
    logger.info(
        "exchange %s of conversation %s: %d fact(s) extracted, %d new or changed",
        saved.answer_id,
        conversation.pk,
        len(items),
        changed,
    )
    if changed:
        profile.facts_changed(user=user, count=changed)
    return {"facts": len(items), "changed": changed}
