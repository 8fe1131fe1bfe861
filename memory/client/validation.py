"""The one check of what the memory app is asked, before anything reaches the server.

Each helper returns the cleaned value or raises MemoryInputError(field, reason). The
vocabulary and the limits are the MCP contract's (ikario_rag/contract.py), so the app
refuses exactly what the server would, with the field named, and never sends it.
"""

from __future__ import annotations

import re
from datetime import date, datetime

from chat.edge import UNSTORABLE, field_name, storable
from ikario_rag import contract
from ikario_rag.text import fold
from memory.client.errors import MemoryInputError

MEMORY_ID = re.compile(rf"[A-Za-z0-9_.:\-]{{1,{contract.MAX_MEMORY_ID}}}")
MAX_TIMEOUT = 300.0  # seconds a caller may give one call
MAX_TTL = 20  # characters of a lifetime ("99999w" and room for spaces)


def namespace(user) -> str:
    """The user's namespace: derived from the signed-in user, never taken from a caller."""
    if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
        raise MemoryInputError("user", "a signed-in user is required")
    return f"user-{user.pk}"


def text(field: str, value, *, max_length: int, required: bool = True) -> str | None:
    if value is None:
        if not required:
            return None
        raise MemoryInputError(field, "is required")
    if not isinstance(value, str):
        raise MemoryInputError(field, "must be a string")
    value = value.strip()
    if not value:
        if not required:
            return None
        raise MemoryInputError(field, "must not be empty")
    if len(value) > max_length:
        raise MemoryInputError(field, f"must be at most {max_length} characters")
    return _storable(field, value)


def _storable(field: str, value: str) -> str:
    # A lone surrogate or a NUL: refused and named, never replaced behind the user's back.
    if not storable(value):
        raise MemoryInputError(field, UNSTORABLE)
    return value


def integer(field: str, value, *, low: int = 1, high: int = contract.MAX_RESULTS) -> int:
    # bool is an int in Python; a JSON true is not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryInputError(field, "must be an integer")
    if not low <= value <= high:
        raise MemoryInputError(field, f"must be between {low} and {high}")
    return value


def score(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryInputError(field, "must be a number")
    if not 0.0 <= value <= 1.0:
        raise MemoryInputError(field, "must be between 0 and 1")
    return float(value)


def flag(field: str, value) -> bool:
    if not isinstance(value, bool):
        raise MemoryInputError(field, "must be true or false")
    return value


def _plain(value: str) -> str:
    """'Thématique' -> 'thematique': users type accents and capitals, the server does not."""
    return fold(value).strip()


def choice(field: str, value, choices: tuple[str, ...], *, allow_all: bool = False):
    if value is None:
        return None
    if not isinstance(value, str):
        raise MemoryInputError(field, f"must be one of {', '.join(choices)}")
    plain = _plain(value)
    if allow_all and plain in ("", "all", "toutes", "tous"):
        return None
    if plain not in choices:
        raise MemoryInputError(field, f"must be one of {', '.join(choices)}")
    return plain


def labels(field: str, value) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise MemoryInputError(field, "must be a list of strings")
    if len(value) > contract.MAX_LIST:
        raise MemoryInputError(field, f"must have at most {contract.MAX_LIST} items")
    cleaned = []
    for item in value:
        if not isinstance(item, str):
            raise MemoryInputError(field, "must be a list of strings")
        item = _storable(field, item.strip())
        if len(item) > contract.MAX_LABEL:
            raise MemoryInputError(field, f"items must be at most {contract.MAX_LABEL} characters")
        if item and item not in cleaned:
            cleaned.append(item)
    return cleaned


def kinds(field: str, value) -> list[str] | None:
    found = labels(field, value)
    for kind in found or ():
        if kind not in contract.KINDS:
            raise MemoryInputError(
                field, f"unknown kind {kind!r} (one of {', '.join(contract.KINDS)})"
            )
    return found


def iso_date(field: str, value) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime | date):
        return value.isoformat()
    if not isinstance(value, str):
        raise MemoryInputError(field, "must be an ISO-8601 date")
    try:
        datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MemoryInputError(field, "must be an ISO-8601 date") from None
    return value.strip()


def ttl(field: str, value) -> str | None:
    """A lifetime such as '1d' or '2w', by the server's own rule (contract.ttl_seconds)."""
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_TTL:
        raise MemoryInputError(field, f"must be {contract.TTL_RULE}")
    try:
        contract.ttl_seconds(value)
    except ValueError:
        raise MemoryInputError(field, f"must be {contract.TTL_RULE}") from None
    return value.strip()


def memory_id(value, field: str = "memory_id") -> str:
    if not isinstance(value, str) or not MEMORY_ID.fullmatch(value):
        raise MemoryInputError(field, "is not a valid memory id")
    return value


def memory_ids(field: str, value, *, most: int) -> list[str]:
    """A non-empty list of distinct memory ids, at most `most`."""
    if not isinstance(value, list) or not value:
        raise MemoryInputError(field, f"must list 1 to {most} memory ids")
    if len(value) > most:
        raise MemoryInputError(field, f"must list 1 to {most} memory ids")
    return list(dict.fromkeys(memory_id(item, field) for item in value))


def timeout(value) -> float | None:
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= MAX_TIMEOUT
    ):
        reason = f"must be a number of seconds between 0 and {MAX_TIMEOUT:g}"
        raise MemoryInputError("timeout", reason)
    return float(value)


def context(value) -> dict:
    """The add_thought context: only the fields the MCP contract knows, each checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MemoryInputError("context", "must be an object")
    for key in value:
        if key not in contract.CONTEXT_FIELDS:
            raise MemoryInputError(f"context.{field_name(key)}", "is not a known context field")
    cleaned: dict = {}
    if value.get("category") is not None:
        cleaned["category"] = choice("context.category", value["category"], contract.CATEGORIES)
    if value.get("kind") is not None:
        cleaned["kind"] = choice("context.kind", value["kind"], contract.KINDS)
    for key in contract.CONTEXT_LIST_FIELDS:
        found = labels(f"context.{key}", value.get(key))
        if found is not None:
            cleaned[key] = found
    if value.get("date") is not None:
        cleaned["date"] = iso_date("context.date", value["date"])
    if value.get("source") is not None:
        cleaned["source"] = text("context.source", value["source"], max_length=contract.MAX_SOURCE)
    if value.get("ttl") is not None:
        cleaned["ttl"] = ttl("context.ttl", value["ttl"])
    if "dedup" in value:
        cleaned["dedup"] = flag("context.dedup", value["dedup"])
    if value.get("replaces") is not None:
        cleaned["replaces"] = memory_id(value["replaces"], "context.replaces")
    if value.get("subcategory") is not None:
        cleaned["subcategory"] = choice(
            "context.subcategory", value["subcategory"], contract.ALL_SUBCATEGORIES
        )
    return cleaned
