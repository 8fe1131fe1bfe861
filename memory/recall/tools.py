"""The memory tools offered to Claude and the executor that runs its calls.

The tools: save_memory and search_memories (their descriptions and JSON schemas are what
Claude reads), get_recent_memories and delete_memory. The executor
hands the input to memory.client.services, the one place it is checked (a bad call comes back to
the model as an is_error tool_result naming the field), with the user's namespace (never
the model's), through the services' async variants.

One name per operation from Claude's tool down to the MCP server, but one: Claude's tool
is `save_memory` (the name Claude is given) and the MCP contract names the server's
`add_thought`.

| Claude's tool         | memory.client.services                | ikario_rag MCP tool              |
|-----------------------|--------------------------------|----------------------------------|
| `save_memory`         | `aadd_thought`                 | `add_thought`                    |
| `search_memories`     | `asearch_memories`             | `search_memories`                |
| `get_recent_memories` | `aget_recent_memories`         | `get_recent_memories`            |
| `delete_memory` (ids) | `adelete_memory`, once per id  | `delete_memory` (one id a call)  |

Claude's `delete_memory` takes a list of ids (found first with a search); the MCP
`forget`, which deletes by topic, is not offered to Claude: a topic also matches memories
that merely share a word, and deleting is not undoable.
"""

from __future__ import annotations

import json
import logging
import time

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from chat.extensions import ToolExecutor, ToolOutcome
from ikario_rag import contract, secrets
from ikario_rag.private import strip as strip_private
from memory.client import live, services
from memory.client import validation as check
from memory.client.errors import MemoryInputError, MemoryNotFound, MemoryServiceError
from memory.learning import kept_out

log = logging.getLogger("memory.recall.tools")

# Claude's tool -> the MCP tool behind it (the table above).
MCP_TOOL_OF = {
    "save_memory": "add_thought",
    "search_memories": "search_memories",
    "get_recent_memories": "get_recent_memories",
    "delete_memory": "delete_memory",
}
# What the model may ask for at once: each result costs it context (up to 1,200 chars).
MODEL_RESULTS = 20
# What Claude may save as: the fact-like kinds go through ikario_rag's dedup and
# contradiction rules (a restatement updates, a changed fact supersedes); "fact" is the
# default, since what a model chooses to remember is most often a fact about the user.
SAVED_KINDS = (*contract.DEDUP_KINDS, "thought")
DEFAULT_SAVED_KIND = "fact"
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
    "get_recent_memories": {
        "fr": "Liste tes souvenirs les plus récents, du plus récent au plus ancien",
        "en": "List your most recent memories, newest first",
    },
    "delete_memory": {
        "fr": "Oublie (efface définitivement) des souvenirs, désignés par leur id (trouvés "
        "d'abord avec search_memories ou get_recent_memories). Uniquement quand "
        "l'utilisateur demande explicitement d'oublier quelque chose",
        "en": "Forget (permanently erase) memories, given by id (found first with "
        "search_memories or get_recent_memories). Only when the user explicitly asks you "
        "to forget something",
    },
}


def _subcategory_text(fr: bool) -> str:
    self_ones = ", ".join(contract.SUBCATEGORIES["self"])
    goal_ones = ", ".join(contract.SUBCATEGORIES["goal"])
    if fr:
        return (
            f"Pour kind self (ce que tu sais de toi) : {self_ones} ; pour kind goal (tes "
            f"objectifs) : {goal_ones} (court ou long terme)"
        )
    return (
        f"For kind self (what you know of yourself): {self_ones}; for kind goal (your "
        f"goals): {goal_ones}"
    )


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
                    "category": {"type": "string", "enum": list(contract.CATEGORIES)},
                    "kind": {
                        "type": "string",
                        "enum": list(SAVED_KINDS),
                        "description": "fact, preference, goal, self : un fait durable sur "
                        "l'utilisateur (par défaut ; s'il redit un fait connu, le souvenir est "
                        "mis à jour au lieu d'être dupliqué) ; thought : tout le reste"
                        if fr
                        else "fact, preference, goal, self: something durable about the user "
                        "(the default; a restated fact updates the memory instead of adding "
                        "a copy); thought: anything else",
                    },
                    "tags": string_list,
                    "concepts": string_list,
                    "emotions": string_list,
                    "subjects": {
                        **string_list,
                        "description": "Qui ou quoi ce souvenir concerne (noms de personnes, "
                        'lieux, choses : ["Mickaël", "ski"]), pour le retrouver par sujet'
                        if fr
                        else "Who or what the memory is about (names of people, places, "
                        'things: ["Mickaël", "ski"]), to find it by subject later',
                    },
                    "ttl": {
                        "type": "string",
                        "description": 'Durée de validité d\'un état passager ("1d", "2w", '
                        '"30d", "12h") : le souvenir s\'efface ensuite. Omis : pour toujours'
                        if fr
                        else 'How long a passing state stays true ("1d", "2w", "30d", "12h"): '
                        "the memory is erased after it. Omitted: forever",
                    },
                    "subcategory": {
                        "type": "string",
                        "enum": list(contract.ALL_SUBCATEGORIES),
                        "description": _subcategory_text(fr),
                    },
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
                        "maximum": MODEL_RESULTS,
                        "default": 5,
                    },
                    "filter_category": {"type": "string", "enum": list(contract.CATEGORIES)},
                    "kinds": {
                        "type": "array",
                        "items": {"type": "string", "enum": list(contract.KINDS)},
                        "description": "Seulement ces types (fact, self, goal, conversation : "
                        "échanges passés, summary : résumés de conversations…)"
                        if fr
                        else "Only these kinds (fact, self, goal, conversation: past "
                        "exchanges, summary: conversation summaries…)",
                    },
                    "subject": {
                        "type": "string",
                        "description": "Seulement les souvenirs sur ce sujet (une personne, un "
                        "lieu, une chose) : « tout sur Mickaël »"
                        if fr
                        else "Only memories about this subject (a person, a place, a thing): "
                        '"everything about Mickaël"',
                    },
                    "subcategory": {
                        "type": "string",
                        "enum": list(contract.ALL_SUBCATEGORIES),
                        "description": "Seulement les souvenirs self ou goal de cette "
                        "sous-catégorie"
                        if fr
                        else "Only self or goal memories of this subcategory",
                    },
                },
                "required": ["query"],
            },
        },
        {
            "name": "get_recent_memories",
            "description": text("get_recent_memories"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MODEL_RESULTS,
                        "default": 10,
                    }
                },
            },
        },
        {
            "name": "delete_memory",
            "description": text("delete_memory"),
            "input_schema": {
                "type": "object",
                "properties": {
                    "ids": {**string_list, "minItems": 1, "maxItems": MODEL_RESULTS},
                    "reason": {"type": "string"},
                },
                "required": ["ids"],
            },
        },
    ]


def _record(memory: dict) -> dict:
    """A memory as the model sees it in a tool_result."""
    meta = memory.get("metadata") or {}
    content = memory.get("content", "")
    if len(content) > _RESULT_TEXT_CHARS:
        content = content[: _RESULT_TEXT_CHARS - 1] + "…"
    out = {
        "id": memory.get("id"),
        "content": content,
        "kind": meta.get("kind"),
        "category": meta.get("category"),
        "tags": meta.get("tags") or [],
        "date": meta.get("date") or meta.get("created_at"),
    }
    for name in ("subjects", "expires_at", "source"):
        if meta.get(name):
            out[name] = meta[name]
    # A self or goal memory's sub-category is one of its tags (ikario_rag keeps it so).
    allowed = contract.SUBCATEGORIES.get(meta.get("kind"), ())
    subcategory = next((t for t in out["tags"] if t in allowed), None)
    if subcategory:
        out["subcategory"] = subcategory
    if "relevance_score" in memory:
        out["relevance_score"] = round(float(memory["relevance_score"]), 3)
    return out


def _quoted(text: str, limit: int = 60) -> str:
    """The model's text as the tool line quotes it (stored with the answer, logged): its
    <private> spans removed, like everything memory writes."""
    text = " ".join(strip_private(text[: limit * 20]).split())
    return "'" + (text if len(text) <= limit else text[: limit - 1] + "…") + "'"


def _count(data: dict, field: str, default: int):
    """The model's count, capped at MODEL_RESULTS; memory.client.services checks the rest."""
    value = data.get(field, default)
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        return min(value, MODEL_RESULTS)
    return value


async def _save_memory(user, conversation, data) -> ToolOutcome:
    if data.get("category") is None:
        raise MemoryInputError("category", f"is required (one of {', '.join(contract.CATEGORIES)})")
    kind = data.get("kind")
    if kind is None:
        kind = DEFAULT_SAVED_KIND
    elif kind not in SAVED_KINDS:
        raise MemoryInputError("kind", f"must be one of {', '.join(SAVED_KINDS)}.")
    subcategory = data.get("subcategory")
    if subcategory is not None and subcategory not in contract.SUBCATEGORIES.get(kind, ()):
        allowed = {k: ", ".join(v) for k, v in contract.SUBCATEGORIES.items()}
        raise MemoryInputError(
            "subcategory",
            f"is for kind self ({allowed['self']}) or goal ({allowed['goal']}), not {kind}",
        )
    context = {
        "category": data.get("category"),
        "kind": kind,
        "tags": data.get("tags"),
        "concepts": data.get("concepts"),
        "emotions": data.get("emotions"),
        "subjects": data.get("subjects"),
        "ttl": data.get("ttl"),
        "subcategory": subcategory,
        "source": f"conversation:{conversation.pk}",
    }
    result = await services.aadd_thought(user=user, content=data.get("content"), context=context)
    status = result.get("status", "created")
    summary = {
        "duplicate": _("Already in memory"),
        "updated": _("Updated a memory"),
    }.get(status) or _("Saved to memory")
    # The server stored a placeholder for each secret: the chat says so where it happened.
    kept = kept_out.secrets_line(result.get("kept_out"))
    if kept:
        summary = f"{summary} ({kept})"
    if status != "duplicate":
        # What was stored: never the <private> spans it dropped, nor the secrets.
        said = " ".join(strip_private(str(data.get("content") or "")).split())
        text = secrets.redact(said).text
        shown = text if len(text) <= 80 else text[:79] + "…"
        await live.atoast(user=user, text=_("Saved to memory: “%(text)s”") % {"text": shown})
    # Saved is saved: a memory not indexed yet ("indexed": false, its vector to be written
    # by the server's maintenance) is already found by text search.
    body = {"saved": True, "id": result.get("id"), "status": status}
    if result.get("replaced_id"):
        body["replaced_id"] = result["replaced_id"]
    if result.get("kept_out"):
        body["kept_out"] = result["kept_out"]  # the model can tell the user, too
    return ToolOutcome(content=json.dumps(body, ensure_ascii=False), summary=summary)


async def _search_memories(user, conversation, data) -> ToolOutcome:
    query = data.get("query")
    subject = data.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise MemoryInputError("subject", "must be a string")
    if not query and subject:
        query = subject  # "everything about Mickaël": the name is the query too
    # An explicit search: no recency window (memory/recall/recency.py), old memories are found.
    found = await services.asearch_memories(
        user=user,
        query=query,
        n_results=_count(data, "n_results", 5),
        filter_category=data.get("filter_category"),
        kinds=data.get("kinds"),
        subjects=[subject] if subject and subject.strip() else None,
        subcategory=data.get("subcategory"),
    )
    results = [_record(m) for m in found.get("results", [])]
    body = {"results": results, "mode_used": found.get("mode_used")}
    summary = ngettext(
        "Searched memories for %(query)s — %(count)d result",
        "Searched memories for %(query)s — %(count)d results",
        len(results),
    ) % {"query": _quoted(query), "count": len(results)}
    return ToolOutcome(content=json.dumps(body, ensure_ascii=False), summary=summary)


async def _get_recent_memories(user, conversation, data) -> ToolOutcome:
    found = await services.aget_recent_memories(user=user, limit=_count(data, "limit", 10))
    memories = [_record(m) for m in found.get("memories", [])]
    summary = ngettext(
        "Looked at recent memories — %(count)d memory",
        "Looked at recent memories — %(count)d memories",
        len(memories),
    ) % {"count": len(memories)}
    return ToolOutcome(
        content=json.dumps({"memories": memories}, ensure_ascii=False), summary=summary
    )


async def _delete_memory(user, conversation, data) -> ToolOutcome:
    # By id, not by topic: a topic search also matches memories that merely share a word
    # (a name, say), and forgetting is not undoable. The model finds the ids first.
    ids = check.memory_ids("ids", data.get("ids"), most=MODEL_RESULTS)
    reason = data.get("reason") if isinstance(data.get("reason"), str) else ""
    forgotten, missing = [], []
    for memory_id in ids:
        try:
            await services.adelete_memory(user=user, memory_id=memory_id, reason=reason or "forget")
            forgotten.append(memory_id)
        except MemoryNotFound:
            missing.append(memory_id)
    summary = ngettext("Forgot %(count)d memory", "Forgot %(count)d memories", len(forgotten)) % {
        "count": len(forgotten)
    }
    body = {"forgotten": forgotten, "not_found": missing}
    return ToolOutcome(
        content=json.dumps(body), summary=summary, is_error=bool(missing and not forgotten)
    )


HANDLERS = {
    "save_memory": _save_memory,
    "search_memories": _search_memories,
    "get_recent_memories": _get_recent_memories,
    "delete_memory": _delete_memory,
}

_FAILED = {
    "save_memory": gettext_lazy("Could not save to memory"),
    "search_memories": gettext_lazy("Memory search failed"),
    "get_recent_memories": gettext_lazy("Could not read recent memories"),
    "delete_memory": gettext_lazy("Could not forget"),
}


async def run_tool(user, conversation, name: str, data) -> ToolOutcome:
    """Run one call; every failure becomes an is_error outcome naming what was wrong."""
    handler = HANDLERS.get(name)
    if handler is None:
        return ToolOutcome(
            content=f"Unknown tool '{name}'. Available: {', '.join(HANDLERS)}.",
            is_error=True,
            summary=_("Unknown tool %(tool)s") % {"tool": name},
        )
    try:
        if not isinstance(data, dict):
            raise MemoryInputError("input", "must be a JSON object")
        return await handler(user, conversation, data)
    except MemoryInputError as exc:
        # Claude's input is flat: its `category` is the service's `context.category`.
        field = exc.field.removeprefix("context.")
        message = f"Invalid input for {name}: {field} {exc.reason}."
    except MemoryNotFound as exc:
        message = f"Not found: {exc}"
    except MemoryServiceError as exc:
        # The model (and through it the user) reads one safe line; the details are logged.
        if exc.detail:
            log.warning("tool %s: %s (%s)", name, exc.message, exc.detail)
        message = exc.sentence
    return ToolOutcome(content=message, is_error=True, summary=str(_FAILED[name]))


def make_executor(*, user, conversation) -> ToolExecutor:
    """The async executor handed to the chat turn for this user and conversation."""

    async def execute_tool(name: str, data: dict) -> ToolOutcome:
        started = time.perf_counter()
        try:
            outcome = await run_tool(user, conversation, name, data)
        except Exception:
            # A bug of ours must not end the turn: the model hears it failed and goes on.
            log.exception("tool %s crashed", name)
            outcome = ToolOutcome(
                content=f"{name} failed with an internal error.",
                is_error=True,
                summary=str(_FAILED.get(name) or _("%(tool)s: failed") % {"tool": name}),
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
