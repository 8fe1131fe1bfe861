""" "Not relevant here": a memory the user said was wrongly recalled for a request is kept, and
auto-recall leaves it out for that request and ranks it lower for similar ones.

Each "not relevant" is a NotRelevantRecall row: the request and its content terms (stemmed,
no stop words, EN/FR: ikario_rag/facts.py's Statement). A new request is compared with
the memory's rows by the share of terms they hold in common (Jaccard): the same terms, and
the memory is left out; a good share in common, and its relevance is scaled down by that
share, so a request half like the dismissed one needs twice the relevance to bring it back.
"""

from __future__ import annotations

from asgiref.sync import sync_to_async

from ikario_rag.facts import Statement
from memory.models import NotRelevantRecall

# At or above this share of terms in common, a request is "the same request".
SAME_REQUEST = 0.8
# Below this share, what two requests share is a word in passing ("watch" in "a horror film
# to watch" and "a movie to watch with my 6 year old": 1 of 9), not a likeness: no effect.
# The similar requests of the leakage set (tests/memory/test_answer_sources.py) share 0.6-0.67.
SIMILAR_REQUEST = 0.25
# Dismissals remembered per memory (the newest): bounded work per recall.
KEPT_PER_MEMORY = 50


def request_terms(query: str) -> list[str]:
    return sorted(Statement(query).terms)


def likeness(a: set[str], b: set[str]) -> float:
    """How alike two requests are, 0..1: the share of their terms they hold in common."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def mark(*, user, memory_id: str, query: str) -> NotRelevantRecall:
    """Record that `memory_id` was not relevant to `query` (once per request)."""
    row, _ = NotRelevantRecall.objects.get_or_create(
        user=user, memory_id=memory_id, query=query, defaults={"terms": request_terms(query)}
    )
    older = NotRelevantRecall.objects.filter(user=user, memory_id=memory_id).order_by("-id")
    stale = list(older.values_list("id", flat=True)[KEPT_PER_MEMORY:])
    if stale:
        NotRelevantRecall.objects.filter(id__in=stale).delete()
    return row


def unmark(*, user, memory_id: str, query: str) -> None:
    NotRelevantRecall.objects.filter(user=user, memory_id=memory_id, query=query).delete()


def dismissed_for(*, user, query: str, memory_ids: list[str]) -> dict[str, float]:
    """{memory_id: likeness of `query` to the closest request it was dismissed for}."""
    rows = NotRelevantRecall.objects.filter(user=user, memory_id__in=memory_ids)
    mine = set(request_terms(query))
    out: dict[str, float] = {}
    for memory_id, query_then, terms in rows.values_list("memory_id", "query", "terms"):
        alike = 1.0 if query_then == query else likeness(mine, set(terms))
        out[memory_id] = max(out.get(memory_id, 0.0), alike)
    return out


def leave_out(*, user, query: str, results: list[dict]) -> list[dict]:
    """`results` (search hits with a relevance_score) without the memories dismissed for
    this request, and with those dismissed for similar ones scored lower."""
    ids = [str(r.get("id")) for r in results if r.get("id")]
    if not ids:
        return results
    dismissed = dismissed_for(user=user, query=query, memory_ids=ids)
    if not dismissed:
        return results
    kept = []
    for result in results:
        alike = dismissed.get(str(result.get("id")), 0.0)
        if alike >= SAME_REQUEST:
            continue
        if alike >= SIMILAR_REQUEST:
            score = float(result.get("relevance_score", 0)) * (1 - alike)
            result = {**result, "relevance_score": score}
        kept.append(result)
    return kept


aleave_out = sync_to_async(leave_out)
