"""A memory record as the memory page shows it: one card's worth of plain values.

Everything here is data for templates, which escape it; dates become aware datetimes for
the |date filter, a source naming a conversation becomes a link to it.
"""

from __future__ import annotations

import re

from django.urls import reverse
from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext_lazy as _

from ikario_rag import contract
from memory import categories

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
_CONVERSATION_SOURCE = re.compile(r"^conversation:(\d{1,18})(?::(\d{1,18}))?$")


def when(value):
    """ISO-8601 from the server -> aware datetime (None if unreadable)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_datetime(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def kind_choices() -> list[tuple[str, str]]:
    return [(kind, KIND_LABELS.get(kind, kind)) for kind in contract.KINDS]


def source_url(source: str) -> str:
    """The conversation a memory came from ("conversation:<id>[:<message>]"), or ""."""
    found = _CONVERSATION_SOURCE.match(source or "")
    if not found:
        return ""
    url = reverse("chat:conversation", args=[int(found.group(1))])
    message = found.group(2)
    return f"{url}?m={message}#message-{message}" if message else url


def card(record: dict) -> dict:
    meta = record.get("metadata") or {}
    score = record.get("relevance_score")
    history = [
        {
            "content": entry.get("content", ""),
            "category": categories.label(entry.get("category")) if entry.get("category") else "",
            "tags": entry.get("tags") or [],
            "replaced_at": when(entry.get("replaced_at")),
            "change": entry.get("change") or "replaced",
        }
        for entry in reversed(record.get("history") or [])
        if isinstance(entry, dict)
    ]
    category = meta.get("category") or contract.DEFAULT_CATEGORY
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
        "source_url": source_url(meta.get("source") or ""),
        "date": when(meta.get("date")),
        "created_at": when(meta.get("created_at")),
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
