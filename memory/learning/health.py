"""Memory health: what in a user's memory is worth cleaning, in groups the /memory page
previews with one action each (memory/web/health.py).

- duplicates: facts that say the same thing (the same terms, or one adding to the other,
  and nothing that tells them apart: a name, a number, a negation); the one with the
  most detail (then the newest) is kept, the others go;
- echoes: a fact stored from a conversation after a near-identical memory was recalled in
  it (the retrieval log, memory_retrievals): the answer restated what was recalled;
- stale: passing states whose end has passed ("in Lyon until Friday", read from the text
  and the day it was stored) or that are older than STALE_DAYS;
- secrets: what ikario_rag/secrets.py calls a secret (passwords, PINs, codes, keys, card
  and bank account numbers, id numbers), kept by versions from before the server replaced them;
- covered: auto-saved transcripts whose facts are all stored as facts (extraction stored
  them all, or the rules of memory/learning/offline_facts.py find only stored facts in them).

Only the newest SCAN memories are read (newest first), so a review stays a few reads.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from django.utils import timezone

from chat.models import Message
from ikario_rag import contract
from ikario_rag import secrets as secrets_rule
from ikario_rag.facts import Statement, compare
from ikario_rag.text import fold
from memory.client import services
from memory.learning import echo, offline_facts
from memory.models import MemoryRetrieval, SavedExchange

SCAN = 500  # newest memories a review reads
PAGE = contract.MAX_RESULTS
STALE_DAYS = 30  # a passing state with no end named is stale after this
FACT_KINDS = ("fact", "self", "goal", "preference", "thought", "observation")
GROUPS = ("duplicates", "echoes", "stale", "secrets", "covered")
_SECOND = timedelta(seconds=1)
_SOURCE = re.compile(r"^conversation:(\d+)(?::(\d+))?")


@dataclass
class Finding:
    id: str
    content: str
    why: str = ""  # what it repeats, what it holds, when it ended
    kind: str = ""


@dataclass
class Review:
    groups: dict[str, list[Finding]] = field(default_factory=lambda: {g: [] for g in GROUPS})
    scanned: int = 0

    @property
    def total(self) -> int:
        return sum(len(found) for found in self.groups.values())

    def ids(self, group: str) -> set[str]:
        return {f.id for f in self.groups.get(group, [])}


# --- reading the memory ------------------------------------------------------------------------


def _records(user) -> list[dict]:
    out: list[dict] = []
    while len(out) < SCAN:
        page = services.list_memories(user=user, offset=len(out), limit=PAGE)
        found = page.get("memories") or []
        out.extend(found)
        if len(found) < PAGE:
            break
    return out[:SCAN]


def _kind(record: dict) -> str:
    return (record.get("metadata") or {}).get("kind") or ""


def _created(record: dict) -> datetime | None:
    value = (record.get("metadata") or {}).get("created_at")
    try:
        moment = datetime.fromisoformat(str(value))
    except ValueError:
        return None
    return moment if moment.tzinfo else timezone.make_aware(moment, timezone.utc)


# --- one statement against another -----------------------------------------------------------


def same_fact(a: Statement, b: Statement) -> bool:
    """Two statements of one fact (ikario_rag's one rule, which extraction's echo filter and
    the server's dedup follow too): nothing tells them apart (a name, a number, a date, a
    negation) and most of their terms are common."""
    return compare(a, b).same_fact


def _sharing_terms(statements: list[Statement]) -> list[tuple[int, int]]:
    """The pairs that may be one fact: those with a term in common (all terms held
    nowhere else are two facts), in order."""
    holding: dict[str, list[int]] = defaultdict(list)
    for i, statement in enumerate(statements):
        for term in statement.term_set:
            holding[term].append(i)
    pairs = {(i, j) for held in holding.values() for n, i in enumerate(held) for j in held[n + 1 :]}
    return sorted(pairs)


# --- the groups ----------------------------------------------------------------------------------


def duplicates(records: list[dict]) -> list[Finding]:
    """Facts restating another: every one but the most detailed (then newest) of a group."""
    candidates = [r for r in records if _kind(r) in FACT_KINDS]
    statements = [Statement(str(r.get("content") or "")) for r in candidates]
    parent = list(range(len(candidates)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in _sharing_terms(statements):
        if root(i) != root(j) and same_fact(statements[i], statements[j]):
            parent[root(j)] = root(i)
    clusters: dict[int, list[int]] = defaultdict(list)
    for i in range(len(candidates)):
        clusters[root(i)].append(i)
    out = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        # Newest first already (list_memories): the first with the most terms is kept.
        kept = max(members, key=lambda i: (len(statements[i].term_set), -i))
        for i in members:
            if i != kept:
                record = candidates[i]
                out.append(_finding(record, candidates[kept].get("content")))
    return out


def echoes(user, records: list[dict]) -> list[Finding]:
    """Facts stored from a conversation after a near-identical memory was recalled in it."""
    by_id = {r.get("id"): r for r in records}
    recalled: dict[int, list[tuple[datetime, str]]] = defaultdict(list)
    for retrieval in MemoryRetrieval.objects.filter(user=user).only(
        "conversation_id", "memories", "created_at"
    ):
        for entry in retrieval.memories or []:
            if isinstance(entry, dict) and entry.get("id"):
                recalled[retrieval.conversation_id].append((retrieval.created_at, entry["id"]))
    if not recalled:
        return []
    missing = {i for seen in recalled.values() for _, i in seen if i not in by_id}
    by_id.update({m.get("id"): m for m in echo.still_there(user, sorted(missing))})
    out = []
    for record in records:
        if _kind(record) not in FACT_KINDS:
            continue
        source = _SOURCE.match(str((record.get("metadata") or {}).get("source") or ""))
        created = _created(record)
        if not source or created is None:
            continue
        mine = Statement(str(record.get("content") or ""))
        for when, memory_id in recalled.get(int(source.group(1)), []):
            earlier = by_id.get(memory_id)
            # Stored times are to the second.
            if memory_id == record.get("id") or earlier is None or when > created + _SECOND:
                continue
            # What extraction's echo filter would have dropped (memory/learning/echo.py).
            if echo.echoes(mine, [Statement(str(earlier.get("content") or ""))]):
                out.append(_finding(record, earlier.get("content")))
                break
    return out


def stale(records: list[dict], today: date | None = None) -> list[Finding]:
    """Passing states whose end, read from their text from the day they were stored, has
    passed; or, with no end named, said to hold now and stored as passing (contextuelle)
    over STALE_DAYS ago."""
    today = today or timezone.localdate()
    out = []
    for record in records:
        if _kind(record) not in FACT_KINDS or (record.get("metadata") or {}).get("expires_at"):
            continue
        created = _created(record)
        if created is None:
            continue
        content = str(record.get("content") or "")
        stored = created.date()
        days = offline_facts.expiry_days(fold(content), stored)
        ended = days is not None and stored + timedelta(days=days) <= today
        old_state = (
            days is None
            and (record.get("metadata") or {}).get("category") == "contextuelle"
            and _NOW.search(fold(content))
            and stored + timedelta(days=STALE_DAYS) <= today
        )
        if ended or old_state:
            out.append(Finding(record["id"], content, stored.isoformat(), _kind(record)))
    return out


# A state said to hold now, with no end named ("currently in Lyon", "malade en ce moment").
_NOW = re.compile(
    r"\b(currently|at the moment|right now|these days|for now|this week|today|sick|ill|"
    r"en ce moment|actuellement|ces jours-ci|pour l'instant|cette semaine|aujourd'hui|malade)\b"
)


def secret_in(content: str) -> str | None:
    """What likely secret a text holds ("key", "password", "card number"...), or None: the
    rule the memory server stores placeholders by (ikario_rag/secrets.py), so what older
    versions kept is found here."""
    return secrets_rule.kind_in(content)


def secrets(records: list[dict]) -> list[Finding]:
    out = []
    for record in records:
        content = str(record.get("content") or "")
        found = secret_in(content)
        if found:
            out.append(Finding(record["id"], content, found, _kind(record)))
    return out


def covered(user, records: list[dict]) -> list[Finding]:
    """Auto-saved transcripts whose facts are all stored as facts."""
    stored_facts = [r for r in records if _kind(r) in FACT_KINDS]
    by_source: dict[str, list[dict]] = defaultdict(list)
    for record in stored_facts:
        by_source[str((record.get("metadata") or {}).get("source") or "")].append(record)
    fact_texts = {_plain(r.get("content")) for r in stored_facts}
    transcripts = [r for r in records if _kind(r) == "conversation"]
    answers = {}
    for record in transcripts:
        source = _SOURCE.match(str((record.get("metadata") or {}).get("source") or ""))
        if source and source.group(2):
            answers[record["id"]] = int(source.group(2))
    extracted = {
        s.answer_id: s.facts
        for s in SavedExchange.objects.filter(
            conversation__user=user, answer_id__in=set(answers.values()), facts__gt=0
        ).exclude(extracted_at=None)
    }
    out = []
    for record in transcripts:
        source = str((record.get("metadata") or {}).get("source") or "")
        its_facts = by_source.get(source, [])
        wanted = extracted.get(answers.get(record["id"]))
        if wanted and len(its_facts) >= wanted:
            why = "; ".join(str(f.get("content")) for f in its_facts[:3])
            out.append(Finding(record["id"], str(record.get("content") or ""), why, "conversation"))
            continue
        ruled = offline_facts.facts_in(str(record.get("content") or ""))
        if ruled and all(_plain(f["content"]) in fact_texts for f in ruled):
            why = "; ".join(f["content"] for f in ruled[:3])
            out.append(Finding(record["id"], str(record.get("content") or ""), why, "conversation"))
    return out


def transcripts_cleaned(user, records: list[dict]) -> int:
    """Record the exchanges whose saved transcripts a clean deleted as saved (a
    SavedExchange with no memories), so that neither auto-save nor `memory_backfill` stores
    them again: a transcript kept by an older version (before exchanges were recorded, or
    before secrets were kept out) is gone for good once the user cleaned it."""
    answers: dict[int, int] = {}
    for record in records:
        source = _SOURCE.match(str((record.get("metadata") or {}).get("source") or ""))
        if _kind(record) == "conversation" and source and source.group(2):
            answers[int(source.group(2))] = int(source.group(1))
    owned = Message.objects.filter(
        pk__in=answers, conversation__user=user, role=Message.Role.ASSISTANT
    ).values_list("pk", "conversation_id")
    created = 0
    for answer_id, conversation_id in owned:
        _, made = SavedExchange.objects.get_or_create(
            answer_id=answer_id, defaults={"conversation_id": conversation_id, "memory_ids": []}
        )
        created += made
    return created


# --- the review ----------------------------------------------------------------------------------


def review(user, today: date | None = None) -> Review:
    """Every group for this user's newest SCAN memories (memory errors propagate)."""
    records = _records(user)
    result = Review(scanned=len(records))
    result.groups["duplicates"] = duplicates(records)
    result.groups["echoes"] = echoes(user, records)
    result.groups["stale"] = stale(records, today)
    result.groups["secrets"] = secrets(records)
    result.groups["covered"] = covered(user, records)
    return result


def _finding(record: dict, repeats) -> Finding:
    content = str(record.get("content") or "")
    return Finding(record["id"], content, str(repeats or ""), _kind(record))


def _plain(content) -> str:
    return " ".join(re.findall(r"\w+", fold(str(content or ""))))
