"""Extraction: facts, not transcripts. What the user says in passing becomes atomic facts
about them, written through ikario_rag's dedup.

memory/learning/conversations.py's task, once a conversation pauses, calls `learn`: the exchanges
not read yet (LearntExchange, keyed by the answer), never one said while memory was paused or off,
go to the model with a key (MEMORY_EXTRACTION on), else to the rules of
memory/learning/offline_facts.py (facts tagged `rules`). A transcript saved by other means
(the Save button, the admin, backfill) schedules the same task. For each exchange the model:

1. reads the user's words, and the assistant's previous answer only as what the user may
   be confirming; never the answer itself, the recalled-memories block, the profile or the
   system prompt (none of them is the user's word);
2. sees the user's stored facts related to those words (search_memories, kinds fact,
   preference, goal, self) as K1..Kn;
3. answers with a forced tool call (`record_facts`, a JSON schema: content, kind, subjects,
   date, `expires` for a passing state, `replaces` naming the Kn a changed fact supersedes);
4. a fact that restates a memory recalled in this conversation (the retrieval log says
   which) is dropped: the memory does not echo itself;
5. the rest is written with add_thoughts: a restated fact is caught by ikario_rag's dedup
   (same text: duplicate; a refinement: updated), a changed one carries `replaces` so the
   server removes the old one and keeps it in the new one's history, a passing state
   carries a ttl and expires; the profile is told how many facts changed.

Only text whose <private> spans were removed is read (memory/learning/backup.py's Exchange).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from chat.models import Conversation, Message
from ikario_rag import contract, secrets
from ikario_rag.private import strip as strip_private
from memory.client import services
from memory.learning import backup, offline_facts, profile
from memory.learning.about_others import asked_to_remember, sensitive_about_others
from memory.learning.echo import echoes, recalled_in
from memory.learning.person import about, newest, when
from memory.learning.review import inbox
from memory.models import LearntExchange, SavedExchange

if TYPE_CHECKING:
    import anthropic

logger = logging.getLogger("memory.learning.extraction")

FACT_KINDS = ("self", "preference", "goal", "fact")
# Who the user is is foundational; the rest is a theme of their life.
CATEGORY_OF = {"self": "fondatrice"}
MAX_FACT_CHARS = 500
MAX_SUBJECTS = 6
KNOWN_FACTS = 10
MAX_EXCHANGE_CHARS = 12_000  # what the small model reads of one exchange
TOOL_NAME = "record_facts"

SYSTEM_PROMPT = """You maintain the long-term memory an assistant keeps about its user.
From what the user said in one exchange, record only DURABLE facts that are
SPECIFIC TO THE USER or the people and things in their life, even said in passing:
- self: who the user is (name, job, where they live, family, languages, health that lasts);
- preference: what they like, dislike, or want from the assistant (tone, format, tools);
- goal: what they are working on or aiming at (projects, plans, trips, deadlines);
- fact: anything else about their life or their circle ("Their sister Ana lives in Porto").
Only the user's words are a source. The assistant's previous answer is shown so that you
know what the user confirms ("yes, exactly"); record from it only what the user confirms.
Never record: questions, hypotheticals ("if I moved to Spain..."), one-off requests
("translate this"), small talk, general knowledge, what the assistant said that the user
did not confirm, secrets (passwords, codes, keys, card or account numbers), other people's
health, pregnancy, addiction or private troubles unless the user asks you to remember them.
Each fact is ONE short third-person sentence in the user's language, about "the user" by
name when known ("Mickael lives in Lyon", "L'utilisateur apprend le piano"). Subjects are
1 to 4 plain lower-case words (people, places, topics). Date: YYYY-MM-DD when the fact says
when it happened or starts, otherwise null. A passing state (sick this week, in Lyon until
Friday, busy with exams this month) is recorded with `expires`, how long it holds: a number
and a unit, h, d or w ("3d", "2w"); a durable fact has expires null.
Known facts are listed with ids K1, K2...: if the user restates one unchanged, repeat it
with exactly the same words; if it CHANGES one (they moved, changed jobs, gave up a plan),
write the new fact and set `replaces` to that id. `questions`: 1 to 3 short questions the
user might later ask that this fact answers WITHOUT repeating its words ("where did I spend
my childhood?" for "grew up in Dakar", "what can I order at the pizzeria?" for
"gluten-free"). Record nothing when the user's words teach nothing about them: an empty
list is the usual answer."""

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
                        "expires": {
                            "type": ["string", "null"],
                            "description": "A passing state: how long it holds (3d, 2w), else null",
                        },
                        "replaces": {
                            "type": ["string", "null"],
                            "description": "The Kn of the known fact this one changes, or null",
                        },
                        "questions": {
                            "type": "array",
                            "items": {"type": "string"},
                            "maxItems": 3,
                            "description": "Questions it answers without its words",
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
    """The model extracts: a key, and extraction on."""
    return bool(settings.MEMORY_EXTRACTION and settings.ANTHROPIC_API_KEY)


def extractor() -> str:
    """Who reads the exchanges: "model", "rules" (no key) or "" (nobody)."""
    if enabled():
        return "model"
    if settings.MEMORY_EXTRACTION:
        return "rules"
    return ""


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


# -- what extraction reads ------------------------------------------------------------------

# The previous answer is only context for a confirmation: its opening is enough.
MAX_CONTEXT_CHARS = 1500


@dataclass
class Said:
    """What extraction reads of one exchange: the user's words, and the answer before them
    (what those words may confirm)."""

    exchange: backup.Exchange
    user: str
    before: str = ""


def said_in(exchanges: list[backup.Exchange]) -> dict[int, Said]:
    """Each exchange's Said, by answer id (exchanges in order)."""
    out: dict[int, Said] = {}
    before = ""
    for exchange in exchanges:
        user = " ".join(t for role, t in exchange.said if role == Message.Role.USER and t)
        out[exchange.answer_id] = Said(exchange, user, before)
        answers = [t for role, t in exchange.said if role == Message.Role.ASSISTANT and t]
        before = answers[-1] if answers else ""
    return out


def build_request(said: Said, known: list[dict]) -> dict:
    """The Messages API request for one exchange (a forced `record_facts` call)."""
    lines = [f"Date of the exchange: {said.exchange.date.date().isoformat()}", ""]
    if known:
        lines.append("Known facts about the user:")
        for n, record in enumerate(known, 1):
            kind = (record.get("metadata") or {}).get("kind", "fact")
            lines.append(f"K{n} [{kind}] {' '.join(str(record.get('content', '')).split())}")
    else:
        lines.append("Known facts about the user: none yet.")
    if said.before:
        lines += [
            "",
            "The assistant's previous answer (only what the user confirms counts):",
            said.before[:MAX_CONTEXT_CHARS],
        ]
    lines += ["", "What the user said:", said.user[:MAX_EXCHANGE_CHARS]]
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


# A passing state's life: a count and a unit, at most a year, stored as said ("5d").
_EXPIRES = re.compile(r"^\s*(\d{1,3})\s*([mhdw])\s*$", re.IGNORECASE)
_UNITS = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}
_UNITS["w"] = timedelta(weeks=1)
_YEAR = timedelta(days=365)


def _ttl(value) -> str | None:
    match = _EXPIRES.match(str(value or ""))
    if not match or int(match.group(1)) == 0:
        return None
    count, unit = int(match.group(1)), match.group(2).lower()
    if count * _UNITS[unit] > _YEAR:
        return "52w"
    return f"{count}{unit}"


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
        ttl = _ttl(fact.get("expires"))
        if ttl:
            context["ttl"] = ttl
        questions = fact.get("questions") if isinstance(fact.get("questions"), list) else []
        questions = [
            " ".join(strip_private(str(q)).split())[: contract.MAX_LABEL] for q in questions
        ]
        if any(questions):
            context["concepts"] = [q for q in questions[:3] if q]
        replaced = known_ids.get(str(fact.get("replaces") or "").strip().upper())
        if replaced:
            context["replaces"] = replaced
        items.append({"content": content, "context": context})
    return items


# -- learning -------------------------------------------------------------------------------


@dataclass
class Learnt:
    exchanges: int = 0  # exchanges read
    facts: int = 0  # facts written
    echoes: int = 0  # facts dropped: they restated a recalled memory
    changed: int = 0  # memories created or updated by them (the rest: exact restatements)


def learn(conversation: Conversation, *, since=None) -> Learnt:
    """Read the conversation's exchanges not read yet (said after `since`, a reset) for
    facts about its user, and write them. Each exchange read is recorded at once: a
    failed memory call raises, and the next attempt goes on from there."""
    outcome = Learnt()
    who = extractor()
    if not who:
        return outcome
    exchanges = backup.exchanges_of(conversation)
    answers = [e.answer_id for e in exchanges]
    done = set(
        LearntExchange.objects.filter(answer_id__in=answers).values_list("answer_id", flat=True)
    )
    done.update(  # read before LearntExchange existed
        SavedExchange.objects.filter(answer_id__in=answers, extracted_at__isnull=False).values_list(
            "answer_id", flat=True
        )
    )
    said = said_in(exchanges)
    todo = [
        said[e.answer_id]
        for e in exchanges
        if e.answer_id not in done and (since is None or e.date > since) and said[e.answer_id].user
    ]
    if not todo:
        return outcome
    user = conversation.user
    recalled = recalled_in(conversation)
    for one in todo:
        items = _model_facts(user, one) if who == "model" else _rule_facts(one)
        items = [item for item in items if not withheld(item["content"], one.user)]
        # A fact the model says changes a known one is a correction, never an echo.
        kept = [
            item
            for item in items
            if item["context"].get("replaces") or not echoes(item["content"], recalled)
        ]
        outcome.echoes += len(items) - len(kept)
        if kept:
            now = timezone.now()  # dated by the message, and by the dates it names
            kept = [when.timed(item, one.exchange.date, now=now) for item in kept]
            kept = [about.with_question_words(item) for item in kept]  # recall bridges meaning
            # A changed one-valued fact, or a negation, supersedes the stored one.
            kept = newest.superseding(user, kept, timeout=settings.MEMORY_TASK_TIMEOUT)
            stored = inbox.keep(user=user, items=kept, conversation=conversation, said=one.user)
            outcome.changed += stored.get("created", 0) + stored.get("updated", 0)
        _record(conversation, one.exchange, len(kept), who)
        outcome.exchanges += 1
        outcome.facts += len(kept)
    logger.info(
        "conversation %s: %d exchange(s) read (%s), %d fact(s), %d echo(es) dropped, "
        "%d new or changed",
        conversation.pk,
        outcome.exchanges,
        who,
        outcome.facts,
        outcome.echoes,
        outcome.changed,
    )
    if outcome.changed:
        profile.facts_changed(user=user, count=outcome.changed)
    return outcome


def withheld(fact: str, user_said: str) -> bool:
    """A fact never learnt, whoever wrote it (the model's output is checked too): one that
    holds a secret (ikario_rag/secrets.py), or someone else's health, pregnancy, addiction
    or the like that the user did not ask to remember (memory/learning/about_others.py)."""
    if secrets.find(fact):
        return True
    return sensitive_about_others(fact) and not asked_to_remember(user_said)


def _model_facts(user, said: Said) -> list[dict]:
    known = _known_facts(user, said.user)
    message = client().messages.create(**build_request(said, known))
    return facts_from(message, known=known, exchange=said.exchange)


def _rule_facts(said: Said) -> list[dict]:
    items = []
    for found in offline_facts.facts_in(said.user, today=said.exchange.date.date()):
        item = offline_facts.as_item(found)
        item["context"]["source"] = said.exchange.source
        ttl = _ttl(item["context"].pop("ttl", None))
        if ttl:
            item["context"]["ttl"] = ttl
        items.append(item)
    return items[: settings.MEMORY_EXTRACTION_MAX_FACTS]


def _record(conversation, exchange: backup.Exchange, facts: int, who: str) -> None:
    try:
        with transaction.atomic():
            LearntExchange.objects.create(
                conversation=conversation, answer_id=exchange.answer_id, facts=facts, extractor=who
            )
    except IntegrityError:
        pass  # read meanwhile by another run: the same facts, through dedup
    SavedExchange.objects.filter(answer_id=exchange.answer_id).update(
        extracted_at=timezone.now(), facts=facts
    )
