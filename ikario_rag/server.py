"""The ikario_rag MCP server: the tools of docs/MEMORY_TOOLS.md over stdio or streamable HTTP.

Run as `python -m ikario_rag` or `python ikario_rag/server.py`. Every tool returns its result
as structured content and as the same JSON in a text block; a bad argument comes back as a
tool error (isError) with a one-line reason, never as a crash.
"""

import json
import logging
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

if __package__ in (None, ""):
    # Run as a script (the web app spawns `python ikario_rag/server.py`): make the package
    # importable from the repository root.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import Field, ValidationError

from ikario_rag import insight, search, validate
from ikario_rag.embed import EmbeddingUnavailable
from ikario_rag.memory import Memory
from ikario_rag.validate import InputError

log = logging.getLogger("ikario_rag.server")

PURGE_INTERVAL = float(os.environ.get("IKARIO_PURGE_INTERVAL", "60"))

Namespace = Annotated[str, Field(description="Isolation unit (one per user in the web app).")]
Kinds = Annotated[list[str] | None, Field(description=f"Any of {', '.join(validate.KINDS)}.")]


class IkarioServer(MCPServer):
    """MCPServer whose argument-type errors read as one line naming the argument."""

    async def call_tool(self, name, arguments, context=None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                first = cause.errors()[0]
                where = ".".join(str(p) for p in first["loc"]) or "arguments"
                raise ToolError(f"{where}: {first['msg']}") from None
            raise


def _result(payload: dict[str, Any]) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False))],
        structured_content=payload,
    )


def _error(message: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=" ".join(message.split()))], is_error=True
    )


def _tool(fn: Callable[..., dict[str, Any]]) -> Callable[..., CallToolResult]:
    """Turn a service call into a tool result; caller mistakes become one-line tool errors."""

    def run(**kwargs: Any) -> CallToolResult:
        try:
            return _result(fn(**kwargs))
        except InputError as exc:
            return _error(str(exc))
        except EmbeddingUnavailable as exc:
            return _error(f"memory unavailable: {exc}")
        except Exception as exc:
            log.exception("tool %s failed", fn.__name__)
            return _error(f"internal error in {fn.__name__}: {type(exc).__name__}")

    run.__name__ = fn.__name__
    run.__doc__ = fn.__doc__
    run.__signature__ = __import__("inspect").signature(fn)  # type: ignore[attr-defined]
    run.__annotations__ = {**fn.__annotations__, "return": CallToolResult}
    return run


def build_server(memory: Memory) -> MCPServer:
    server = IkarioServer(
        name="ikario_rag",
        instructions="Long-term memory: search, add and manage memories in a namespace.",
        log_level="WARNING",
    )

    def add_thought(
        content: str,
        context: dict[str, Any] | None = None,
        namespace: Namespace = "default",
    ) -> dict[str, Any]:
        """Store one memory. context: category, kind, tags, concepts, emotions, subjects,
        date (ISO-8601), source, ttl ("1h", "7d", "30d"), dedup (bool).
        <private>...</private> spans are removed before anything is stored."""
        ns = validate.namespace(namespace)
        item = validate.new_memory(content, context)
        return memory.add(ns, [item])[0]

    def add_thoughts(
        items: list[dict[str, Any]], namespace: Namespace = "default"
    ) -> dict[str, Any]:
        """Store a batch of memories, each {content, context}; same rules as add_thought."""
        ns = validate.namespace(namespace)
        if not isinstance(items, list) or not items:
            raise InputError("items must be a non-empty list of {content, context}")
        if len(items) > 1000:
            raise InputError("items has more than 1000 entries")
        checked = []
        for pos, raw in enumerate(items):
            if not isinstance(raw, dict) or "content" not in raw:
                raise InputError(f"items[{pos}] must be an object with a content field")
            extra = set(raw) - {"content", "context"}
            if extra:
                raise InputError(f"items[{pos}] has unknown field(s): {', '.join(sorted(extra))}")
            where = f"items[{pos}]."
            checked.append(validate.new_memory(raw["content"], raw.get("context"), where))
        outcome = memory.add(ns, checked)
        statuses = [r["status"] for r in outcome]
        return {
            "ids": [r["id"] for r in outcome],
            "created": statuses.count("created"),
            "updated": statuses.count("updated"),
            "duplicates": statuses.count("duplicate"),
            "results": outcome,
        }

    def search_memories(
        query: str,
        n_results: int = 5,
        filter_category: str | None = None,
        kinds: Kinds = None,
        tags: list[str] | None = None,
        date_from: str | None = None,
        date_to: str | None = None,
        mode: str = "hybrid",
        namespace: Namespace = "default",
    ) -> dict[str, Any]:
        """Search memories, best first, each with relevance_score (0..1) and distance.
        mode: hybrid (vectors + full text, default), semantic or text."""
        ns = validate.namespace(namespace)
        q = validate.required_text(query, "query", 2000)
        filters = search.Filters(
            category=validate.optional_choice(
                filter_category, "filter_category", validate.CATEGORIES
            ),
            kinds=validate.string_list(kinds, "kinds", validate.KINDS),
            tags=validate.string_list(tags, "tags"),
            date_from=validate.optional_date(date_from, "date_from"),
            date_to=validate.optional_date(date_to, "date_to"),
        )
        if filters.date_from and filters.date_to and filters.date_from > filters.date_to:
            raise InputError("date_from is after date_to")
        return search.search(
            memory,
            ns,
            q,
            validate.bounded_int(n_results, "n_results"),
            filters,
            validate.choice(mode, "mode", validate.MODES),
        )

    def trace_concept_evolution(
        concept: str, limit: int = 10, namespace: Namespace = "default"
    ) -> dict[str, Any]:
        """Dated timeline (oldest first) of memories about a concept; each entry's
        `evolution` says what changed against the previous one."""
        ns = validate.namespace(namespace)
        c = validate.required_text(concept, "concept", 500)
        return insight.trace_concept_evolution(memory, ns, c, validate.bounded_int(limit, "limit"))

    def check_consistency(statement: str, namespace: Namespace = "default") -> dict[str, Any]:
        """Does a statement contradict stored memories? Returns contradictions (with reasons)
        and supporting memories; no LLM involved (rules on negation, antonyms, numbers and
        changed values among similar memories)."""
        ns = validate.namespace(namespace)
        s = validate.required_text(statement, "statement", 2000)
        return insight.check_consistency(memory, ns, s)

    def get_memories(ids: list[str], namespace: Namespace = "default") -> dict[str, Any]:
        """Fetch memories by id; unknown ids are listed in `missing` (an error if none exist)."""
        ns = validate.namespace(namespace)
        wanted = validate.id_list(ids)
        found = memory.get(ns, wanted)
        known = {m["id"] for m in found}
        missing = [i for i in wanted if i not in known]
        if not found:
            raise InputError(f"unknown memory id(s): {', '.join(missing[:5])}")
        return {"memories": found, "missing": missing}

    def get_recent_memories(
        limit: int = 10, kinds: Kinds = None, namespace: Namespace = "default"
    ) -> dict[str, Any]:
        """The most recently stored memories, newest first."""
        ns = validate.namespace(namespace)
        n = validate.bounded_int(limit, "limit")
        wanted = validate.string_list(kinds, "kinds", validate.KINDS)
        return {"memories": memory.recent(ns, n, wanted)}

    def delete_memory(
        id: str, reason: str = "", namespace: Namespace = "default"
    ) -> dict[str, Any]:
        """Delete one memory by id; `deleted` is false when no such memory exists."""
        ns = validate.namespace(namespace)
        memory_id = validate.required_text(id, "id", 200)
        if not isinstance(reason, str):
            raise InputError("reason must be a string")
        gone = memory.delete(ns, [memory_id])
        if gone:
            log.info("deleted %s in %r: %s", memory_id, ns, reason[:200])
        return {"deleted": bool(gone)}

    def forget(
        topic: str,
        min_score: float = 0.5,
        dry_run: bool = False,
        namespace: Namespace = "default",
    ) -> dict[str, Any]:
        """Delete every memory about a topic (relevance >= min_score); dry_run only lists them."""
        ns = validate.namespace(namespace)
        t = validate.required_text(topic, "topic", 500)
        return insight.forget(
            memory, ns, t, validate.score(min_score, "min_score"), validate.flag(dry_run, "dry_run")
        )

    def memory_stats(namespace: str | None = None) -> dict[str, Any]:
        """Counts by category and kind, last save, model and index size (all namespaces
        when namespace is absent)."""
        ns = None if namespace is None else validate.namespace(namespace)
        return {"namespace": ns, **memory.stats(ns)}

    for fn in (
        add_thought,
        add_thoughts,
        search_memories,
        trace_concept_evolution,
        check_consistency,
        get_memories,
        get_recent_memories,
        delete_memory,
        forget,
        memory_stats,
    ):
        server.add_tool(_tool(fn), name=fn.__name__, description=fn.__doc__)
    return server


def start_background(memory: Memory, purge_interval: float = PURGE_INTERVAL) -> threading.Event:
    """Repair after the model loads, then purge expired memories every `purge_interval` s."""
    stop = threading.Event()

    def loop() -> None:
        try:
            memory.vectors.client  # noqa: B018 -- open Chroma now, off the request path
            memory.embedder.wait(600)
            memory.repair()
        except Exception:
            log.exception("start-up repair failed")
            memory.repaired.set()
        while not stop.wait(purge_interval):
            try:
                memory.purge_expired()
            except Exception:
                log.exception("purge failed")

    worker = threading.Thread(target=loop, name="ikario-maintenance", daemon=True)
    worker.start()
    stop.thread = worker  # type: ignore[attr-defined]  -- lets tests wait for it to end
    return stop


if __name__ == "__main__":
    from ikario_rag.cli import main

    sys.exit(main())
