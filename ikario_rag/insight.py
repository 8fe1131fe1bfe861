"""forget, trace_concept_evolution and check_consistency: all without an LLM."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from ikario_rag import consistency, search, text

_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


def forget(memory: Any, namespace: str, topic: str, min_score: float, dry_run: bool) -> dict:
    """Remove memories about `topic`: those a hybrid search scores at least `min_score`."""
    found = search.search(
        memory, namespace, topic, 100, search.Filters(), "hybrid", search.DEFAULT_TUNING
    )["results"]
    doomed = [r for r in found if r["relevance_score"] >= min_score]
    if not dry_run and doomed:
        memory.delete(namespace, [r["id"] for r in doomed])
    return {
        "removed": [{"id": r["id"], "content": r["content"]} for r in doomed],
        "dry_run": dry_run,
    }


def trace_concept_evolution(memory: Any, namespace: str, concept: str, limit: int) -> dict:
    """A dated timeline (oldest first) of the memories about `concept`.

    Candidates come from a hybrid search; a memory belongs to the timeline when its
    relevance is at least 0.5 or it carries the concept in its concepts/tags/subjects. The
    `limit` most relevant are kept, then ordered by their `date`. Each entry's `evolution`
    compares it with the previous entry: time elapsed, terms that appear, terms that are
    gone, concepts added or dropped, and a flip of polarity (negation) when there is one.
    """
    wanted = text.fold(concept.strip())
    found = search.search(
        memory, namespace, concept, 100, search.Filters(), "hybrid", search.DEFAULT_TUNING
    )["results"]
    kept = [
        r
        for r in found
        if r["relevance_score"] >= 0.5
        or wanted
        in {
            text.fold(label)
            for name in ("concepts", "tags", "subjects")
            for label in r["metadata"][name]
        }
    ][:limit]
    kept.sort(key=lambda r: (r["metadata"]["date"], r["metadata"]["created_at"]))
    timeline = []
    previous = None
    for record in kept:
        timeline.append(
            {
                "id": record["id"],
                "date": record["metadata"]["date"],
                "content": record["content"],
                "concepts": record["metadata"]["concepts"],
                "evolution": _evolution(previous, record),
            }
        )
        previous = record
    return {"concept": concept, "timeline": timeline}


def _evolution(previous: dict | None, current: dict) -> str:
    if previous is None:
        return "first mention"
    parts = []
    days = (_when(current) - _when(previous)).days
    if days > 0:
        parts.append(f"{days} day{'s' if days > 1 else ''} later")
    elif days == 0:
        parts.append("same day")
    before = set(text.content_words(previous["content"]))
    after = set(text.content_words(current["content"]))
    new = [w for w in dict.fromkeys(text.content_words(current["content"])) if w not in before]
    gone = [w for w in dict.fromkeys(text.content_words(previous["content"])) if w not in after]
    if new:
        parts.append("new: " + ", ".join(new[:8]))
    if gone:
        parts.append("no longer: " + ", ".join(gone[:8]))
    old_c = {text.fold(c) for c in previous["metadata"]["concepts"]}
    new_c = {text.fold(c) for c in current["metadata"]["concepts"]}
    if new_c - old_c:
        parts.append("concepts added: " + ", ".join(sorted(new_c - old_c)))
    if old_c - new_c:
        parts.append("concepts dropped: " + ", ".join(sorted(old_c - new_c)))
    if _negated(previous["content"]) != _negated(current["content"]):
        parts.append("polarity flipped")
    if not new and not gone:
        parts.append("restated")
    return "; ".join(parts)


def _when(record: dict) -> datetime:
    return text.parse_date(record["metadata"]["date"])


def _negated(sentence: str) -> bool:
    return text.negated(sentence)


def check_consistency(memory: Any, namespace: str, statement: str) -> dict:
    """Contradictions, support and what the rules cannot judge for `statement` among stored
    memories, without an LLM.

    1. Retrieve up to 20 memories by hybrid search.
    2. Judge each with consistency.judge (who it is about first; then the rules: polarity,
       an ended habit, a diet or an allergy broken, opposites, a changed job, place,
       number, day or one-valued relation; an agreement; an addition or a second value of
       a relation that has several).
    3. A contradiction is listed with its score (the memory's cosine, at least 0.5) and the
       rule's reason; an agreement is `supporting`; a memory about the same subject and
       topic that no rule can judge is `undetermined` (a model may judge it: the web app
       does); a compatible or unrelated memory is not listed.
    4. verdict and consistency_score from consistency.summary.
    """
    found = search.search(
        memory, namespace, statement, 20, search.Filters(), "hybrid", search.DEFAULT_TUNING
    )["results"]
    lists: dict[str, list] = {
        consistency.CONTRADICTION: [],
        consistency.SUPPORT: [],
        consistency.UNDETERMINED: [],
    }
    for record in found:
        cosine = 1.0 - record["distance"]
        judged = consistency.judge(statement, record["content"], cosine)
        if judged.verdict not in lists:
            continue
        lists[judged.verdict].append(
            {
                "id": record["id"],
                "content": record["content"],
                "date": record["metadata"]["date"],
                "score": round(max(0.5, min(1.0, cosine)), 4),
                "reason": judged.reason,
            }
        )
    contradictions = lists[consistency.CONTRADICTION]
    supporting = lists[consistency.SUPPORT]
    undetermined = lists[consistency.UNDETERMINED]
    return {
        "statement": statement,
        **consistency.summary(contradictions, supporting, undetermined),
        "contradictions": contradictions,
        "supporting": supporting,
        "undetermined": undetermined,
        "judged_by": "rules",
    }
