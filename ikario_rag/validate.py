"""Argument checks: every bad argument becomes one InputError with a one-line reason."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ikario_rag import contract, text

CATEGORIES = ("fondatrice", "thematique", "contextuelle")
KINDS = contract.KINDS
MODES = ("hybrid", "semantic", "text")
MAX_CONTENT = 20_000
MAX_LIST = 50
_CONTEXT_KEYS = {
    "category",
    "kind",
    "tags",
    "concepts",
    "emotions",
    "subjects",
    "date",
    "source",
    "ttl",
    "dedup",
    "replaces",
}


class InputError(ValueError):
    """A caller mistake; the message is shown to the caller as is."""


@dataclass
class NewMemory:
    """A validated add_thought item, private spans already removed."""

    content: str
    category: str = "contextuelle"
    kind: str = "thought"
    tags: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    emotions: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    date: datetime | None = None
    source: str | None = None
    ttl: timedelta | None = None
    dedup: bool = True
    replaces: str | None = None  # id of the memory this one supersedes


def namespace(value: Any) -> str:
    if value is None:
        return "default"
    if not isinstance(value, str) or not value.strip():
        raise InputError("namespace must be a non-empty string")
    if len(value) > 200:
        raise InputError("namespace is longer than 200 characters")
    return value.strip()


def required_text(value: Any, name: str, limit: int = MAX_CONTENT) -> str:
    if not isinstance(value, str):
        raise InputError(f"{name} must be a string")
    cleaned = " ".join(text.strip_private(value).split()) if name != "content" else value
    if not cleaned.strip():
        raise InputError(f"{name} must not be empty")
    if len(cleaned) > limit:
        raise InputError(f"{name} is longer than {limit} characters")
    return cleaned.strip()


def bounded_int(value: Any, name: str, low: int = 1, high: int = 100) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be an integer between {low} and {high}")
    if not low <= value <= high:
        raise InputError(f"{name} must be between {low} and {high}, got {value}")
    return value


def score(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InputError(f"{name} must be a number between 0 and 1")
    if not 0.0 <= float(value) <= 1.0:
        raise InputError(f"{name} must be between 0 and 1, got {value}")
    return float(value)


def flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise InputError(f"{name} must be true or false")
    return value


def choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
    return value


def optional_choice(value: Any, name: str, allowed: tuple[str, ...]) -> str | None:
    return None if value is None else choice(value, name, allowed)


def string_list(value: Any, name: str, allowed: tuple[str, ...] | None = None) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list):
        raise InputError(f"{name} must be a list of strings")
    if len(value) > MAX_LIST:
        raise InputError(f"{name} has more than {MAX_LIST} entries")
    out: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise InputError(f"{name} must be a list of strings")
        cleaned = " ".join(text.strip_private(item).split())
        if allowed is not None and cleaned not in allowed:
            raise InputError(f"{name} entries must be among {', '.join(allowed)}; got {item!r}")
        if cleaned and cleaned not in out:
            out.append(cleaned[:200])
    return out


def optional_date(value: Any, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError(f"{name} must be an ISO-8601 date string")
    try:
        return text.parse_date(value)
    except ValueError:
        raise InputError(f"{name} {value!r} is not an ISO-8601 date") from None


def id_list(value: Any, name: str = "ids") -> list[str]:
    if isinstance(value, str) or not isinstance(value, list) or not value:
        raise InputError(f"{name} must be a non-empty list of memory ids")
    if len(value) > 100:
        raise InputError(f"{name} has more than 100 entries")
    if not all(isinstance(item, str) and item.strip() for item in value):
        raise InputError(f"{name} must contain non-empty strings")
    return [item.strip() for item in value]


def new_memory(content: Any, context: Any, where: str = "") -> NewMemory:
    """Check one add_thought item; `where` prefixes messages for batch items ("items[3].")."""
    if not isinstance(content, str):
        raise InputError(f"{where}content must be a string")
    if len(content) > MAX_CONTENT * 2:
        raise InputError(f"{where}content is longer than {MAX_CONTENT} characters")
    stored = " ".join(text.strip_private(content).split())
    if not stored:
        raise InputError(f"{where}content is empty once <private> spans are removed")
    if len(stored) > MAX_CONTENT:
        raise InputError(f"{where}content is longer than {MAX_CONTENT} characters")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise InputError(f"{where}context must be an object")
    unknown = sorted(set(context) - _CONTEXT_KEYS)
    if unknown:
        raise InputError(f"{where}context has unknown field(s): {', '.join(unknown)}")
    item = NewMemory(content=stored)
    if context.get("category") is not None:
        item.category = choice(context["category"], f"{where}context.category", CATEGORIES)
    if context.get("kind") is not None:
        item.kind = choice(context["kind"], f"{where}context.kind", KINDS)
    for name in ("tags", "concepts", "emotions", "subjects"):
        setattr(item, name, string_list(context.get(name), f"{where}context.{name}"))
    item.date = optional_date(context.get("date"), f"{where}context.date")
    source = context.get("source")
    if source is not None:
        if not isinstance(source, str) or len(source) > 500:
            raise InputError(f"{where}context.source must be a string of at most 500 characters")
        item.source = text.strip_private(source).strip() or None
    ttl = context.get("ttl")
    if ttl is not None:
        if not isinstance(ttl, str):
            raise InputError(f"{where}context.ttl must be a string like '1h', '7d' or '30d'")
        try:
            item.ttl = text.parse_ttl(ttl)
        except ValueError as exc:
            raise InputError(f"{where}context.{exc}") from None
    if context.get("dedup") is not None:
        item.dedup = flag(context["dedup"], f"{where}context.dedup")
    replaces = context.get("replaces")
    if replaces is not None:
        if not isinstance(replaces, str) or not 0 < len(replaces.strip()) <= 200:
            raise InputError(f"{where}context.replaces must be a memory id")
        item.replaces = replaces.strip()
    return item
