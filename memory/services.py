"""The memory, as the rest of the app uses it: one sync function per thing a user can do.

Each function validates its arguments before anything is sent (MemoryInputError names
the field), derives the namespace from the user (`user-<pk>`, never from the caller), and
calls one ikario_rag tool through the long-lived MCP client. From async code, call these
with `sync_to_async(fn, thread_sensitive=False)`.

Errors: MemoryDisabled (MCP_MEMORY_ENABLED=false), MemoryUnavailable (server down, slow
or failed to start), MemoryInputError, MemoryNotFound. memory_stats() and
memory_status() report those states instead of raising, for the header indicator.
"""

from __future__ import annotations

import logging
import re
import unicodedata
from datetime import date, datetime

from memory import mcp_client
from memory.errors import (
    MemoryDisabled,
    MemoryInputError,
    MemoryNotFound,
    MemoryServiceError,
    MemoryToolError,
    MemoryUnavailable,
)

logger = logging.getLogger("memory.services")

CATEGORIES = ("fondatrice", "thematique", "contextuelle")
KINDS = ("thought", "conversation", "fact", "observation", "summary", "self", "goal", "note")
MODES = ("hybrid", "semantic", "text")
TTLS = ("1h", "7d", "30d")
LIST_FIELDS = ("tags", "concepts", "emotions", "subjects")

MAX_QUERY = 2_000
MAX_CONTENT = 100_000
MAX_LABEL = 100
MAX_LIST = 50
MEMORY_ID = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")
# How ikario_rag words "no such memory" ("unknown memory id(s): ...", "... not found").
_NOT_FOUND = re.compile(r"unknown (memory )?id|not found|no such memory", re.IGNORECASE)


# --- validation --------------------------------------------------------------------


def _namespace(user) -> str:
    if user is None or not getattr(user, "is_authenticated", False) or user.pk is None:
        raise MemoryInputError("user", "a signed-in user is required")
    return f"user-{user.pk}"


def _text(field: str, value, *, max_length: int, required: bool = True) -> str | None:
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
    return value


def _integer(field: str, value, *, low: int, high: int) -> int:
    # bool is an int in Python; a JSON true is not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise MemoryInputError(field, "must be an integer")
    if not low <= value <= high:
        raise MemoryInputError(field, f"must be between {low} and {high}")
    return value


def _score(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise MemoryInputError(field, "must be a number")
    if not 0.0 <= value <= 1.0:
        raise MemoryInputError(field, "must be between 0 and 1")
    return float(value)


def _flag(field: str, value) -> bool:
    if not isinstance(value, bool):
        raise MemoryInputError(field, "must be true or false")
    return value


def _plain(value: str) -> str:
    """'Thématique' -> 'thematique': users type accents and capitals, the server does not."""
    decomposed = unicodedata.normalize("NFKD", value)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).strip().lower()


def _choice(field: str, value, choices: tuple[str, ...], *, allow_all: bool = False):
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


def _labels(field: str, value) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise MemoryInputError(field, "must be a list of strings")
    if len(value) > MAX_LIST:
        raise MemoryInputError(field, f"must have at most {MAX_LIST} items")
    labels = []
    for item in value:
        if not isinstance(item, str):
            raise MemoryInputError(field, "must be a list of strings")
        item = item.strip()
        if len(item) > MAX_LABEL:
            raise MemoryInputError(field, f"items must be at most {MAX_LABEL} characters")
        if item and item not in labels:
            labels.append(item)
    return labels


def _kinds(field: str, value) -> list[str] | None:
    kinds = _labels(field, value)
    if kinds is None:
        return None
    for kind in kinds:
        if kind not in KINDS:
            raise MemoryInputError(field, f"unknown kind {kind!r} (one of {', '.join(KINDS)})")
    return kinds


def _iso_date(field: str, value) -> str | None:
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


def _memory_id(value) -> str:
    if not isinstance(value, str) or not MEMORY_ID.match(value):
        raise MemoryInputError("memory_id", "is not a valid memory id")
    return value


def _timeout(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 300:
        raise MemoryInputError("timeout", "must be a number of seconds between 0 and 300")
    return float(value)


def _context(value) -> dict:
    """The add_thought context: only the fields the MCP contract knows, each checked."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise MemoryInputError("context", "must be an object")
    known = {"category", "kind", "date", "source", "ttl", "dedup", *LIST_FIELDS}
    for key in value:
        if key not in known:
            raise MemoryInputError(f"context.{key}", "is not a known context field")
    context: dict = {}
    if value.get("category") is not None:
        context["category"] = _choice("context.category", value["category"], CATEGORIES)
    if value.get("kind") is not None:
        context["kind"] = _choice("context.kind", value["kind"], KINDS)
    for key in LIST_FIELDS:
        labels = _labels(f"context.{key}", value.get(key))
        if labels is not None:
            context[key] = labels
    if value.get("date") is not None:
        context["date"] = _iso_date("context.date", value["date"])
    if value.get("source") is not None:
        context["source"] = _text("context.source", value["source"], max_length=500)
    if value.get("ttl") is not None:
        context["ttl"] = _choice("context.ttl", value["ttl"], TTLS)
    if "dedup" in value:
        context["dedup"] = _flag("context.dedup", value["dedup"])
    return context


# --- calling the server ------------------------------------------------------------


def _call(tool: str, arguments: dict, *, main_field: str, timeout: float | None = None) -> dict:
    if not mcp_client.memory_enabled():
        raise MemoryDisabled()
    arguments = {k: v for k, v in arguments.items() if v is not None}
    try:
        return mcp_client.get_client().call_tool(tool, arguments, timeout=timeout)
    except MemoryToolError as exc:
        # We validated first, so a refusal is about the content itself (e.g. only a
        # <private> span, or an unknown id): name the argument it is about.
        field = next((name for name in arguments if name in exc.message), main_field)
        if _NOT_FOUND.search(exc.message):
            raise MemoryNotFound(exc.message) from None
        raise MemoryInputError(field, exc.message) from None


# --- the memory, per user ----------------------------------------------------------


def search_memories(
    *,
    user,
    query,
    n_results=5,
    filter_category=None,
    kinds=None,
    tags=None,
    mode=None,
    timeout=None,
) -> dict:
    """Memories for `query`, best first: {"results": [record + relevance_score], "mode_used"}."""
    arguments = {
        "namespace": _namespace(user),
        "query": _text("query", query, max_length=MAX_QUERY),
        "n_results": _integer("n_results", n_results, low=1, high=100),
        "filter_category": _choice("filter_category", filter_category, CATEGORIES, allow_all=True),
        "kinds": _kinds("kinds", kinds),
        "tags": _labels("tags", tags),
        "mode": _choice("mode", mode, MODES),
    }
    return _call("search_memories", arguments, main_field="query", timeout=_timeout(timeout))


def add_thought(*, user, content, context=None, timeout=None) -> dict:
    """Store one memory: {"id", "status": created|updated|duplicate, "replaced_id"?}."""
    arguments = {
        "namespace": _namespace(user),
        "content": _text("content", content, max_length=MAX_CONTENT),
        "context": _context(context),
    }
    return _call("add_thought", arguments, main_field="content", timeout=_timeout(timeout))


def trace_concept_evolution(*, user, concept, limit=10) -> dict:
    """How a concept changed over time: {"timeline": [{id, date, content, evolution}]}."""
    arguments = {
        "namespace": _namespace(user),
        "concept": _text("concept", concept, max_length=MAX_QUERY),
        "limit": _integer("limit", limit, low=1, high=100),
    }
    return _call("trace_concept_evolution", arguments, main_field="concept")


def check_consistency(*, user, statement) -> dict:
    """How a statement fits the memory: {"consistency_score", "contradictions", "supporting"}."""
    arguments = {
        "namespace": _namespace(user),
        "statement": _text("statement", statement, max_length=MAX_QUERY),
    }
    return _call("check_consistency", arguments, main_field="statement")


def get_memory(*, user, memory_id) -> dict:
    """One memory record of this user's, or MemoryNotFound."""
    arguments = {"namespace": _namespace(user), "ids": [_memory_id(memory_id)]}
    found = _call("get_memories", arguments, main_field="ids").get("memories") or []
    for record in found:
        if record.get("id") == memory_id:
            return record
    raise MemoryNotFound(f"no memory {memory_id!r}")


def delete_memory(*, user, memory_id, reason="") -> dict:
    """Delete one memory of this user's: {"deleted": true}, or MemoryNotFound."""
    arguments = {
        "namespace": _namespace(user),
        "id": _memory_id(memory_id),
        "reason": _text("reason", reason or "", max_length=500, required=False) or "",
    }
    result = _call("delete_memory", arguments, main_field="id")
    if not result.get("deleted"):
        raise MemoryNotFound(f"no memory {memory_id!r}")
    return result


def forget(*, user, topic, min_score=0.5, dry_run=False) -> dict:
    """Remove the memories about a topic: {"removed": [{id, content}]} (none with dry_run)."""
    arguments = {
        "namespace": _namespace(user),
        "topic": _text("topic", topic, max_length=MAX_QUERY),
        "min_score": _score("min_score", min_score),
        "dry_run": _flag("dry_run", dry_run),
    }
    return _call("forget", arguments, main_field="topic")


def recent_memories(*, user, limit=10, kinds=None) -> dict:
    """This user's latest memories, newest first: {"memories": [record]}."""
    arguments = {
        "namespace": _namespace(user),
        "limit": _integer("limit", limit, low=1, high=100),
        "kinds": _kinds("kinds", kinds),
    }
    return _call("get_recent_memories", arguments, main_field="limit")


def wait_until_ready(timeout: float | None = None) -> str:
    """Start the memory server if needed and wait for it (commands and scripts, not views:
    a cold start loads the embedding model, longer than one call's timeout)."""
    if not mcp_client.memory_enabled():
        return "disabled"
    mcp_client.get_client().wait_connected(_timeout(timeout))
    return memory_status()


def memory_status() -> str:
    """'connected', 'disconnected' or 'disabled' (starts the client if needed)."""
    if not mcp_client.memory_enabled():
        return "disabled"
    return mcp_client.get_client().status()


def memory_stats(*, user) -> dict:
    """What the header indicator shows; never raises for a down or disabled memory.

    {"connected", "status", "total_memories", "last_save", "by_category", "by_kind",
     "error"}: counts are this user's only, None when the server could not be asked.
    """
    namespace = _namespace(user)
    stats = {
        "connected": False,
        "status": memory_status(),
        "total_memories": None,
        "last_save": None,
        "by_category": {},
        "by_kind": {},
        "error": "",
    }
    if stats["status"] == "disabled":
        stats["error"] = MemoryDisabled().message
        return stats
    try:
        found = _call("memory_stats", {"namespace": namespace}, main_field="namespace")
    except MemoryServiceError as exc:
        stats["status"] = memory_status()
        stats["error"] = exc.message
        if isinstance(exc, MemoryUnavailable):
            stats["retry_after"] = exc.retry_after
        return stats
    stats.update(
        connected=True,
        status="connected",
        total_memories=found.get("total_memories", 0),
        last_save=found.get("last_save"),
        by_category=found.get("by_category") or {},
        by_kind=found.get("by_kind") or {},
        embedding_model=found.get("embedding_model"),
    )
    return stats


def server_stats() -> dict:
    """The whole index, every namespace (operators only: `manage.py memory_stats`)."""
    return _call("memory_stats", {}, main_field="namespace")
