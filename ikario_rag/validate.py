"""Argument checks past the types: every bad argument becomes one InputError naming it.

The MCP layer (tools.py) has already checked each argument's type against its annotation;
these checks are what a type cannot say (lengths after `<private>` spans are removed, dates,
durations), and they still check types themselves for in-process callers (the benchmarks).
Every vocabulary and limit comes from contract.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ikario_rag import contract, secrets, text
from ikario_rag.errors import InputError

__all__ = ["InputError", "NewMemory", "new_memory"]


@dataclass
class NewMemory:
    """A validated add_thought item, private spans already removed."""

    content: str
    category: str = contract.DEFAULT_CATEGORY
    kind: str = contract.DEFAULT_KIND
    tags: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    emotions: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    date: datetime | None = None
    source: str | None = None
    ttl: timedelta | None = None
    dedup: bool = True
    replaces: str | None = None  # id of the memory this one supersedes
    kept_out: list[str] = field(default_factory=list)  # secrets replaced by a placeholder


def kept_out_of(content: str) -> tuple[str, list[str], tuple[str, ...]]:
    """(the text as stored, each secret replaced by a placeholder; the kinds kept out; the
    secret values, to drop the labels that repeat one): ikario_rag/secrets.py's rule."""
    redacted = secrets.redact(content)
    return redacted.text, list(redacted.kept_out), redacted.values


def stored_labels(labels: list[str], values: tuple[str, ...], kept: list[str]) -> list[str]:
    """Labels as stored: one that repeats a secret of the text (or part of one) goes, one
    holding a secret of its own has it replaced; what was kept out is added to `kept`."""
    wanted = [text.fold(v) for v in values]
    out: list[str] = []
    for label in labels:
        folded = text.fold(label)
        if any(folded in v or v in folded for v in wanted if len(folded) >= 3 or folded == v):
            continue
        redacted, kinds, _ = kept_out_of(label)
        kept.extend(k for k in kinds if k not in kept)
        if redacted not in out:
            out.append(redacted)
    return out


def shown(value: Any) -> str:
    """A caller's value quoted in an error: private spans removed, at most 40 characters."""
    if isinstance(value, str):
        cleaned = text.clean(value)
        return repr(cleaned[:40] + ("..." if len(cleaned) > 40 else ""))
    return type(value).__name__


def namespace(value: Any) -> str:
    if value is None:
        return "default"
    if not isinstance(value, str) or not value.strip():
        raise InputError("namespace must be a non-empty string")
    if len(value) > contract.MAX_NAMESPACE:
        raise InputError(f"namespace is longer than {contract.MAX_NAMESPACE} characters")
    if text.has_control(value):
        raise InputError("namespace must not contain control characters")
    return value.strip()


def required_text(value: Any, name: str, limit: int) -> str:
    """A query, statement, topic or concept: private spans removed, white space folded."""
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string")
    cleaned = text.clean(value)
    if not cleaned:
        raise InputError(f"{name} must not be empty")
    if len(cleaned) > limit:
        raise InputError(f"{name} is longer than {limit} characters")
    return cleaned


def memory_id(value: Any, name: str = "id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} must be a non-empty string")
    if len(value) > contract.MAX_MEMORY_ID or text.has_control(value):
        raise InputError(f"{name} is not a memory id")
    return value.strip()


def bounded_int(value: Any, name: str, low: int = 1, high: int = contract.MAX_RESULTS) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer between {low} and {high}")
    if not low <= value <= high:
        raise InputError(f"{name} must be between {low} and {high}")
    return value


def score(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{name} must be a number between 0 and 1")
    if not 0.0 <= float(value) <= 1.0:  # NaN fails here too
        raise InputError(f"{name} must be between 0 and 1")
    return float(value)


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{name} must be true or false")
    return value


def choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}; got {shown(value)}")
    return value


def optional_choice(value: Any, name: str, allowed: tuple[str, ...]) -> str | None:
    return None if value is None else choice(value, name, allowed)


def string_list(value: Any, name: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    """Labels (tags, concepts...) or kinds: private spans removed, blanks and repeats dropped."""
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list):
        raise InputError(f"{name} must be a list of strings")
    if len(value) > contract.MAX_LIST:
        raise InputError(f"{name} has more than {contract.MAX_LIST} entries")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"{name} must be a list of strings")
        cleaned = text.clean(item)[: contract.MAX_LABEL]
        if allowed is not None and cleaned not in allowed:
            raise InputError(
                f"{name} entries must be among {', '.join(allowed)}; got {shown(item)}"
            )
        if cleaned and cleaned not in out:
            out.append(cleaned)
    return out


def optional_date(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be an ISO-8601 date string")
    try:
        return text.parse_date(text.clean(value))
    except (ValueError, OverflowError):
        raise InputError(f"{name} {shown(value)} is not an ISO-8601 date") from None


def date_range(date_from: Any, date_to: Any) -> tuple[datetime | None, datetime | None]:
    start = optional_date(date_from, "date_from")
    end = optional_date(date_to, "date_to")
    if start and end and start > end:
        raise InputError("date_from is after date_to")
    return start, end


def recent_from(days: Any) -> datetime | None:
    """Where a recency window of `days` days starts (None: no window)."""
    if days is None:
        return None
    return text.now() - timedelta(
        days=bounded_int(days, "recent_days", 1, contract.MAX_RECENT_DAYS)
    )


def id_list(value: Any, name: str = "ids") -> list[str]:
    if isinstance(value, str) or not isinstance(value, list) or not value:
        raise InputError(f"{name} must be a non-empty list of memory ids")
    if len(value) > contract.MAX_IDS:
        raise InputError(f"{name} has more than {contract.MAX_IDS} entries")
    return [memory_id(item, name) for item in value]


def reason(value: Any) -> str:
    """Why a memory is deleted: only ever logged, so private spans go first."""
    if not isinstance(value, str):
        raise InputError("reason must be a string")
    return text.clean(value)[: contract.MAX_REASON]


def new_memory(content: Any, context: Any, where: str = "") -> NewMemory:
    """Check one add_thought item; `where` prefixes messages for batch items ("items[3].")."""
    if not isinstance(content, str):
        raise InputError(f"{where}content must be a string")
    if len(content) > contract.MAX_CONTENT * 2:
        raise InputError(f"{where}content is longer than {contract.MAX_CONTENT} characters")
    stored, kept, values = kept_out_of(text.clean(content))
    if not stored:
        raise InputError(f"{where}content is empty once <private> spans are removed")
    if len(stored) > contract.MAX_CONTENT:
        raise InputError(f"{where}content is longer than {contract.MAX_CONTENT} characters")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InputError(f"{where}context must be an object")
    unknown = sorted(set(context) - set(contract.CONTEXT_FIELDS))
    if unknown:
        names = ", ".join(shown(u) if not _plain_name(u) else u for u in unknown[:5])
        raise InputError(f"{where}context has unknown field(s): {names}")
    item = NewMemory(content=stored, kept_out=kept)
    if context.get("category") is not None:
        item.category = choice(context["category"], f"{where}context.category", contract.CATEGORIES)
    if context.get("kind") is not None:
        item.kind = choice(context["kind"], f"{where}context.kind", contract.KINDS)
    for name in contract.CONTEXT_LIST_FIELDS:
        labels = string_list(context.get(name), f"{where}context.{name}")
        setattr(item, name, stored_labels(labels, values, item.kept_out))
    item.date = optional_date(context.get("date"), f"{where}context.date")
    source = context.get("source")
    if source is not None:
        if not isinstance(source, str) or len(source) > contract.MAX_SOURCE:
            raise InputError(
                f"{where}context.source must be a string of at most {contract.MAX_SOURCE}"
                " characters"
            )
        item.source = kept_out_of(text.clean(source, fold=False))[0] or None
    ttl = context.get("ttl")
    if ttl is not None:
        if not isinstance(ttl, str):
            raise InputError(f"{where}context.ttl must be a string like '1h', '7d' or '30d'")
        try:
            item.ttl = text.parse_ttl(text.clean(ttl))
        except ValueError:
            raise InputError(
                f"{where}context.ttl {shown(ttl)} is not a duration like '1h', '7d' or '30d'"
            ) from None
    if context.get("dedup") is not None:
        item.dedup = flag(context["dedup"], f"{where}context.dedup")
    replaces = context.get("replaces")
    if replaces is not None:
        if not isinstance(replaces, str) or not 0 < len(replaces.strip()) <= contract.MAX_MEMORY_ID:
            raise InputError(f"{where}context.replaces must be a memory id")
        item.replaces = replaces.strip()
    subcategory = context.get("subcategory")
    if subcategory is not None:
        allowed = contract.SUBCATEGORIES.get(item.kind)
        if not allowed:
            raise InputError(f"{where}context.subcategory is only for kind self or goal")
        chosen = choice(subcategory, f"{where}context.subcategory", allowed)
        # Kept as a tag: every tag filter (search, list, the memory page) finds it.
        if chosen not in item.tags:
            item.tags = [*item.tags, chosen]
    return item


def _plain_name(name: str) -> bool:
    return name.isidentifier() and len(name) <= 40
