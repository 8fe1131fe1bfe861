"""Auto-retrieval: before each LLM call, search the user's message in the user's
memories and inject what scores high enough into the system prompt.

What decides is ikario_rag's relevance_score, the probability that a memory is what the
message is about or needs (the names and words they share, who a fact is about, an
allergy for a meal...; docs/MEMORY_TOOLS.md): the RECALL_CANDIDATES best-ranked memories
are scored, those at or above the user's min_score (0.5 by default: more likely relevant
than not) are kept, most relevant first, at most max_results; when none reaches it, a fact
that stands out alone (STANDOUT: well above the rest, themselves at noise level) is kept,
the one a question asked without the fact's words finds first ("what can I order at the
pizzeria?" and "gluten-free": 0.21 against 0.006 for the next). Knowledge before
transcripts: facts (and every other kind) are searched first, the saved exchanges only
when none of them answers. A message that refers back
("what could I cook for her?") is searched with the user's previous message
(memory/recall/follow_up.py).

Never blocking: the search's deadline is MEMORY_RETRIEVAL_TIMEOUT (the product's budget,
shorter than a tool call's), and any failure leaves the turn without memories (logged
with its error) instead of holding it up.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from django.conf import settings

from chat.models import Message
from ikario_rag import contract
from ikario_rag.private import strip as strip_private
from memory.client import services
from memory.client.errors import MemoryServiceError
from memory.models import MemoryRetrieval
from memory.recall import follow_up, not_relevant, recency
from memory.recall.prompts import estimate_tokens, memory_block

log = logging.getLogger("memory.recall.retrieval")

# The embedding model reads at most 256 tokens; a longer query only slows full-text search.
MAX_QUERY_CHARS = 1000
# Memories scored per turn: relevance, not the search's rank, picks the max_results kept.
# A fact that bears on the message without sharing its words or meaning ("The user is
# learning Spanish" for "ten phrases for my language practice") ranks low among many facts
# that open alike ("The user..."): it must be among those scored (~2 ms more than 10).
RECALL_CANDIDATES = 40
# Of a long message, only this much is read to find the query: cutting first is safe (a span
# cut open hides the rest) and keeps stripping a 100k-character message's markers (~80 ms
# of CPU for the worst ones, in a worker thread) down to a fifth.
QUERY_SCAN_CHARS = 20 * MAX_QUERY_CHARS


@dataclass
class Retrieval:
    block: str = ""  # the delimited block for the system prompt, "" when nothing found
    memories: list[dict] = field(default_factory=list)  # those injected, best first
    error: str = ""
    latency_ms: float = 0.0
    tokens_added: int = 0
    log_id: int | None = None  # the memory_retrievals row


def retrieval_timeout() -> float:
    return float(settings.MEMORY_RETRIEVAL_TIMEOUT)


def retrieval_mode() -> str | None:
    """None = the server's default (hybrid). "semantic" skips full-text search: cheaper,
    but weaker on names and rare words (see docs/BENCHMARKS.md, auto-retrieval)."""
    return settings.MEMORY_RETRIEVAL_MODE or None


# Transcripts of past exchanges: recalled only when no piece of knowledge answers.
TRANSCRIPT_KINDS = ("conversation",)


def knowledge_kinds() -> list[str]:
    """Every kind of memory but transcripts: facts, the user's self, goals, notes..."""
    return [kind for kind in contract.KINDS if kind not in TRANSCRIPT_KINDS]


async def search_for_turn(*, user, query: str, max_results: int, min_score: float) -> list[dict]:
    """The memories worth injecting: at most `max_results`, each scoring >= min_score, the
    most relevant first. Knowledge first: the transcripts are searched only when no
    fact answers, so a transcript never crowds out, nor outranks, the fact it repeats
    (the second search reuses the query's embedding: ikario_rag caches it)."""
    found = await _relevant(user, query, knowledge_kinds(), max_results, min_score)
    if not found:
        found = await _relevant(user, query, list(TRANSCRIPT_KINDS), max_results, min_score)
    return found


async def _relevant(user, query: str, kinds: list[str], max_results: int, min_score: float):
    found = await services.asearch_memories(
        user=user,
        query=query,
        n_results=max(max_results, RECALL_CANDIDATES),
        kinds=kinds,
        mode=retrieval_mode(),
        timeout=retrieval_timeout(),
        recent_days=recency.recall_window(query),
    )
    # Memories the user said were not relevant to requests like this one: out, or lower.
    scored = await not_relevant.aleave_out(user=user, query=query, results=found.get("results", []))
    ranked = sorted(scored, key=lambda m: -float(m.get("relevance_score", 0)))
    results = [m for m in ranked if float(m.get("relevance_score", 0)) >= min_score]
    return results[:max_results] or standout(ranked, min_score, query)


# In a question, a first fact that scores at least STANDOUT_FLOOR of min_score and
# STANDOUT_RATIO times the next one stands out: unrelated messages ("write a haiku",
# "hello") score every fact alike (0.003-0.013), an indirect question its fact far above
# the rest. Questions only: "Bonne nuit" put a night nurse's job 26 times above the rest
# (bench/quality.py's auto-recall set: its one false recall with the rule for any message).
STANDOUT_FLOOR = 0.3
STANDOUT_RATIO = 8.0
FACT_KINDS = frozenset({"fact", "self", "preference", "goal"})


def standout(results: list[dict], min_score: float, query: str = "?") -> list[dict]:
    """The first of `results` (best first) alone when it is a fact that stands out, for a
    question (`query` holds a question mark)."""
    if not results or min_score > contract.RELEVANT or "?" not in query:
        return []  # a stricter user's gate stays theirs
    first = float(results[0].get("relevance_score", 0))
    second = float(results[1].get("relevance_score", 0)) if len(results) > 1 else 0.0
    kind = (results[0].get("metadata") or {}).get("kind")
    if (
        kind in FACT_KINDS
        and first >= STANDOUT_FLOOR * min_score
        and first >= STANDOUT_RATIO * second
    ):
        return results[:1]
    return []


async def _earlier_messages(conversation, message) -> list[str]:
    """The user's previous message in this conversation (private spans removed)."""
    earlier = (
        await Message.objects.filter(conversation=conversation, role=Message.Role.USER)
        .exclude(pk=message.pk)
        .filter(created_at__lte=message.created_at)
        .order_by("-created_at", "-id")
        .values_list("content", flat=True)
        .afirst()
    )
    shown = await asyncio.to_thread(searchable_text, earlier or "")
    return [shown] if shown else []


def searchable_text(content: str) -> str:
    """What a message is searched for: its text without <private> spans (ikario_rag's one
    rule: nested, spaced, any casing, entity-encoded), white space folded, bounded. What
    the user marks private is neither searched for nor written to the retrieval log."""
    return " ".join(strip_private(content[:QUERY_SCAN_CHARS]).split())[:MAX_QUERY_CHARS]


async def auto_retrieve(
    *, user, conversation, message, memory_settings, lang: str, logged: bool = True
) -> Retrieval:
    """Search, build the block, and log the injection (or the failure) in memory_retrievals
    (not with `logged` off: a message said while memory is paused leaves no trace)."""
    # Linear but tens of milliseconds on a hostile message: not on the event loop.
    said = await asyncio.to_thread(searchable_text, message.content or "")
    outcome = Retrieval()
    if not said:
        return outcome
    query = follow_up.query_for(said, await _earlier_messages(conversation, message))
    query = query[:MAX_QUERY_CHARS]
    started = time.perf_counter()
    try:
        outcome.memories = await search_for_turn(
            user=user,
            query=query,
            max_results=memory_settings.max_results,
            min_score=memory_settings.min_score,
        )
    except MemoryServiceError as exc:
        # The log row is shown to the user (memory settings): the safe line only.
        outcome.error = exc.message[:300]
        if exc.detail:
            log.warning("auto-retrieval: %s (%s)", exc.message, exc.detail)
    except Exception:  # noqa: BLE001 -- memory must never take the turn down
        log.exception("auto-retrieval failed")
        outcome.error = "memory unavailable: internal error"
    outcome.latency_ms = (time.perf_counter() - started) * 1000
    outcome.block = memory_block(outcome.memories, lang=lang)
    outcome.tokens_added = estimate_tokens(outcome.block) if outcome.block else 0
    if outcome.error:
        log.warning("auto-retrieval for conversation %s: %s", conversation.pk, outcome.error)
    if not logged:
        return outcome
    row = await MemoryRetrieval.objects.acreate(
        user=user,
        conversation=conversation,
        message=message,
        query=query,
        memories=[
            {"id": m.get("id"), "score": round(float(m.get("relevance_score", 0)), 4)}
            for m in outcome.memories
        ],
        tokens_added=outcome.tokens_added,
        latency_ms=round(outcome.latency_ms, 2),
        error=outcome.error,
    )
    outcome.log_id = row.pk
    return outcome


async def memory_was_down_last_turn(conversation, *, before_id: int | None) -> bool:
    """True when this conversation's previous retrieval failed: the user was told already
    (`before_id` None: this turn's was not logged, the latest logged one is the previous)."""
    earlier = MemoryRetrieval.objects.filter(conversation=conversation)
    if before_id is not None:
        earlier = earlier.filter(id__lt=before_id)
    previous = await earlier.order_by("-id").only("error").afirst()
    return bool(previous and previous.error)
