"""A memory record as the memory page shows it: one card's worth of plain values.

Everything here is data for templates, which escape it; dates become aware datetimes for
the |date filter; a source naming a conversation is named and linked by memory/display/sources.py
(it needs the user: only their own chats are named).
"""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from ikario_rag import contract
from memory.display import categories, versions

KIND_LABELS = {
    "thought": _("Thought"),
    "conversation": _("Conversation"),
    "fact": _("Fact"),
    "observation": _("Observation"),
    "summary": _("Summary"),
    "self": _("About you"),
    "goal": _("Goal"),
    "note": _("Note"),
    "preference": _("Preference"),
}


when = versions.when  # ISO-8601 from the server -> aware datetime (None if unreadable)


def kind_choices() -> list[tuple[str, str]]:
    return [(kind, KIND_LABELS.get(kind, kind)) for kind in contract.KINDS]


def card(record: dict) -> dict:
    meta = record.get("metadata") or {}
    score = record.get("relevance_score")
    category = meta.get("category") or contract.DEFAULT_CATEGORY
    history = []
    # Newest first: each earlier version is said as what changed into the one after it.
    newer = {"content": record.get("content", ""), "category": category}
    for entry in reversed(record.get("history") or []):
        if not isinstance(entry, dict):
            continue
        was = entry.get("category") or ""
        history.append(
            {
                "content": entry.get("content", ""),
                "category": categories.label(was) if was else "",
                "category_after": categories.label(newer["category"])
                if was and newer["category"] and was != newer["category"]
                else "",
                "tags": entry.get("tags") or [],
                "replaced_at": when(entry.get("replaced_at")),
                "change": entry.get("change") or "replaced",
                "version": versions.change(entry.get("content", ""), newer["content"]),
            }
        )
        newer = {"content": entry.get("content", ""), "category": was or newer["category"]}
    kind = meta.get("kind") or contract.DEFAULT_KIND
    return {
        "id": record.get("id", ""),
        "content": record.get("content", ""),
        "category": category,
        "category_label": categories.label(category),
        "kind": kind,
        "kind_label": KIND_LABELS.get(kind, kind),
        "tags": meta.get("tags") or [],
        "concepts": meta.get("concepts") or [],
        "subjects": meta.get("subjects") or [],
        "source": meta.get("source") or "",
        "date": when(meta.get("date")),
        "created_at": when(meta.get("created_at")),
        "expires_at": when(meta.get("expires_at")),  # a passing state's end ("until Friday")
        "score": float(score) if isinstance(score, int | float) else None,
        "history": history,  # newest first
        "trace_concept": trace_concept(record),
    }


def trace_concept(record: dict) -> str:
    """What to trace a memory by: its first concept, subject or tag, else its first words."""
    meta = record.get("metadata") or {}
    for name in ("concepts", "subjects", "tags"):
        labels = [label for label in meta.get(name) or [] if isinstance(label, str) and label]
        if labels:
            return labels[0][: contract.MAX_TOPIC]
    words = str(record.get("content", "")).split()[:6]
    return " ".join(words)[: contract.MAX_TOPIC]


def by_relevance(records: list[dict]) -> tuple[list[dict], list[dict]]:
    """A search's results split at contract.RELEVANT (0.5, the score that separates a
    memory that is about the query from one that is not, docs/MEMORY_TOOLS.md): (the
    relevant ones, the rest), each in the order given. Shown first and counted apart, the
    rest only on request."""
    relevant, rest = [], []
    for record in records:
        score = record.get("relevance_score")
        is_relevant = isinstance(score, int | float) and score >= contract.RELEVANT
        (relevant if is_relevant else rest).append(record)
    return relevant, rest
