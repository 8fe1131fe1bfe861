"""The memory tools offered to Claude and the executor that runs its calls.

Definitions follow seed 000 feature 8 (save_memory, search_memories, their descriptions and
JSON schemas), plus recent_memories and forget (seeds 002/003). The executor checks the
input itself, so a bad call comes back to the model as an is_error tool_result naming the
field, then routes to memory.services with the user's namespace (never the model's).
"""

from __future__ import annotations

import json
import logging
import time

from asgiref.sync import sync_to_async

from chat.extensions import ToolExecutor, ToolOutcome
from memory import services
from memory.errors import MemoryInputError, MemoryNotFound, MemoryServiceError

log = logging.getLogger("memory.tools")

CATEGORIES = ("fondatrice", "thematique", "contextuelle")
MAX_SEARCH_RESULTS = 20
MAX_RECENT = 20
MAX_FORGET = 20
# What a search result tells the model: enough to use it, without index internals.
_RESULT_TEXT_CHARS = 1200

_TEXT = {
    "save_memory": {
        "fr": "Sauvegarde cette conversation ou une pensée importante dans ta mémoire à long terme",
        "en": "Save this conversation or an important thought to your long-term memory",
    },
    "search_memories": {
        "fr": "Recherche dans tes souvenirs de conversations passées",
        "en": "Search your memories of past conversations",
    },
    "recent_memories": {
        "fr": "Liste tes souvenirs les plus récents, du plus récent au plus ancien",
        "en": "List your most recent memories, newest first",
    },
    "forget": {
        "fr": "Oublie (efface définitivement) des souvenirs, désignés par leur id (trouvés "
        "d'abord avec search_memories ou recent_memories). Uniquement quand l'utilisateur "
        "demande explicitement d'oublier quelque chose",
        "en": "Forget (permanently erase) memories, given by id (found first with "
        "search_memories or recent_memories). Only when the user explicitly asks you to "
        "forget something",
    },
}


def memory_tools(lang: str = "en") -> list[dict]:
    """Anthropic tool definitions, described in the user's language."""
    fr = lang == "fr"

    def text(name):
        return _TEXT[name]["fr" if fr else "en"]

    string_list = {"type": "array", "items": {"type": "string"}}
    return [
        {
            "name": "save_memory",
            "description": text("save_memory"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "content": {
                        "type": "string",
                        "description": "Ce qu'il faut retenir, rédigé pour être compris plus tard"
                        if fr
                        else "What to remember, written to be understood later",
                    },
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                    "tags": string_list,
                    "concepts": string_list,
                    "emotions": string_list,
                },
                "required": ["content", "category"],
            },
        },
        {
            "name": "search_memories",
            "description": text("search_memories"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "n_results": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_RESULTS,
                        "default": 5,
                    },
                    "filter_category": {"type": "string", "enum": list(CATEGORIES)},
                },
                "required": ["query"],
            },
        },
        {
            "name": "recent_memories",
            "description": text("recent_memories"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_RECENT,
                        "default": 10,
                    }
                },
            },
        },
        {
            "name": "forget",
            "description": text("forget"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "ids": {**string_list, "minItems": 1, "maxItems": MAX_FORGET},
                    "reason": {"type": "string"},
                },
                "required": ["ids"],
            },
        },
    ]


class ToolInputError(ValueError):
    """The model's input does not fit the schema; the message names the field."""


def _text(data: dict, field: str, *, required: bool = True) -> str | None:
    value = data.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ToolInputError(f"'{field}' must be a non-empty string")
    return value.strip()


def _strings(data: dict, field: str) -> list[str]:
    value = data.get(field)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolInputError(f"'{field}' must be an array of strings")
    return [v.strip() for v in value if v.strip()]


def _integer(data: dict, field: str, *, default: int, low: int, high: int) -> int:
    value = data.get(field, default)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolInputError(f"'{field}' must be an integer between {low} and {high}")
    if not low <= value <= high:
        raise ToolInputError(f"'{field}' must be between {low} and {high}, got {value}")
    return value


def _category(data: dict, field: str, *, required: bool) -> str | None:
    value = data.get(field)
    if value is None and not required:
        return None
    if value not in CATEGORIES:
        raise ToolInputError(f"'{field}' must be one of {', '.join(CATEGORIES)}, got {value!r}")
    return value


def _record(memory: dict) -> dict:
    """A memory as the model sees it in a tool_result."""
    meta = memory.get("metadata") or {}
    content = memory.get("content", "")
    if len(content) > _RESULT_TEXT_CHARS:
        content = content[: _RESULT_TEXT_CHARS - 1] + "…"
    out = {
        "id": memory.get("id"),
        "content": content,
        "category": meta.get("category"),
        "tags": meta.get("tags") or [],
        "date": meta.get("date") or meta.get("created_at"),
    }
    if "relevance_score" in memory:
        out["relevance_score"] = round(float(memory["relevance_score"]), 3)
    return out


def _quoted(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return "'" + (text if len(text) <= limit else text[: limit - 1] + "…") + "'"


def _plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def _save_memory(user, conversation, data) -> ToolOutcome:
    content = _text(data, "content")
    context = {
        "category": _category(data, "category", required=True),
        "tags": _strings(data, "tags"),
        "concepts": _strings(data, "concepts"),
        "emotions": _strings(data, "emotions"),
        "source": f"conversation:{conversation.pk}",
    }
    result = services.add_thought(user=user, content=content, context=context)
    status = result.get("status", "created")
    summary = {
        "duplicate": "Already in memory",
        "updated": "Updated a memory",
    }.get(status, "Saved to memory")
    return ToolOutcome(content=json.dumps(result, ensure_ascii=False), summary=summary)


def _search_memories(user, conversation, data) -> ToolOutcome:
    query = _text(data, "query")
    n_results = _integer(data, "n_results", default=5, low=1, high=MAX_SEARCH_RESULTS)
    category = _category(data, "filter_category", required=False)
    found = services.search_memories(
        user=user, query=query, n_results=n_results, filter_category=category
    )
    results = [_record(m) for m in found.get("results", [])]
    body = {"results": results, "mode_used": found.get("mode_used")}
    summary = f"Searched memories for {_quoted(query)} — {_plural(len(results), 'result')}"
    return ToolOutcome(content=json.dumps(body, ensure_ascii=False), summary=summary)


def _recent_memories(user, conversation, data) -> ToolOutcome:
    limit = _integer(data, "limit", default=10, low=1, high=MAX_RECENT)
    found = services.recent_memories(user=user, limit=limit)
    memories = [_record(m) for m in found.get("memories", [])]
    summary = f"Looked at recent memories — {_plural(len(memories), 'memory', 'memories')}"
    return ToolOutcome(
        content=json.dumps({"memories": memories}, ensure_ascii=False), summary=summary
    )


def _forget(user, conversation, data) -> ToolOutcome:
    # By id, not by topic: a topic search also matches memories that merely share a word
    # (a name, say), and forgetting is not undoable. The model finds the ids first.
    ids = _strings(data, "ids")
    if not ids or len(ids) > MAX_FORGET:
        raise ToolInputError(f"'ids' must list 1 to {MAX_FORGET} memory ids")
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    forgotten, missing = [], []
    for memory_id in dict.fromkeys(ids):
        try:
            services.delete_memory(user=user, memory_id=memory_id, reason=reason or "forget")
            forgotten.append(memory_id)
        except MemoryNotFound:
            missing.append(memory_id)
    summary = f"Forgot {_plural(len(forgotten), 'memory', 'memories')}"
    body = {"forgotten": forgotten, "not_found": missing}
    return ToolOutcome(
        content=json.dumps(body), summary=summary, is_error=bool(missing and not forgotten)
    )


HANDLERS = {
    "save_memory": _save_memory,
    "search_memories": _search_memories,
    "recent_memories": _recent_memories,
    "forget": _forget,
}

_FAILED = {
    "save_memory": "Could not save to memory",
    "search_memories": "Memory search failed",
    "recent_memories": "Could not read recent memories",
    "forget": "Could not forget",
}


def run_tool(user, conversation, name: str, data) -> ToolOutcome:
    """Run one call synchronously; every failure becomes an is_error outcome."""
    handler = HANDLERS.get(name)
    if handler is None:
        return ToolOutcome(
            content=f"Unknown tool '{name}'. Available: {', '.join(HANDLERS)}.",
            is_error=True,
            summary=f"Unknown tool {name}",
        )
    try:
        if not isinstance(data, dict):
            raise ToolInputError("the tool input must be a JSON object")
        return handler(user, conversation, data)
    except ToolInputError as exc:
        message = f"Invalid input for {name}: {exc}."
    except MemoryInputError as exc:
        message = f"Invalid input for {name}: {exc}"
    except MemoryNotFound as exc:
        message = f"Not found: {exc}"
    except MemoryServiceError as exc:
        message = f"Memory unavailable: {exc}" if str(exc) else "Memory unavailable."
    return ToolOutcome(content=message, is_error=True, summary=_FAILED[name])


def make_executor(*, user, conversation) -> ToolExecutor:
    """The async executor handed to the chat loop for this turn (it applies the 10 s cap)."""
    run = sync_to_async(run_tool, thread_sensitive=False)

    async def execute_tool(name: str, data: dict) -> ToolOutcome:
        started = time.perf_counter()
        try:
            outcome = await run(user, conversation, name, data)
        except Exception:
            # A bug of ours must not end the turn: the model hears it failed and goes on.
            log.exception("tool %s crashed", name)
            outcome = ToolOutcome(
                content=f"{name} failed with an internal error.",
                is_error=True,
                summary=_FAILED.get(name, f"{name} failed"),
            )
        log.info(
            "tool %s user=%s conversation=%s %s in %.0f ms: %s",
            name,
            user.pk,
            conversation.pk,
            "error" if outcome.is_error else "ok",
            (time.perf_counter() - started) * 1000,
            outcome.summary,
        )
        return outcome

    return execute_tool
