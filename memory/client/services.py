"""The memory, as the rest of the app uses it: one function per MCP tool, named after it.

Each function checks its arguments once (memory/client/validation.py, the contract's limits;
MemoryInputError names the field) before anything is sent, derives the namespace from the
user (`user-<pk>`, never from the caller), and calls that one ikario_rag tool through the
long-lived MCP client. Async callers (the chat turn, Claude's tools, the memory page's
socket) use the `a`-prefixed variants (`asearch_memories`, `aadd_thought`, ...); sync views,
the worker and management commands use the plain ones. Each operation is written once
where it can be: the reads the turn makes are async (they await the client without a
thread hop, and cancelling the turn cancels them), their sync names asgiref's
async_to_sync of them; get_memories pages through several calls, written sync, its async
name sync_to_async of it. A write that tells the user's pages (add_thought, delete_memory)
stays a pair: each tells them from its own side (live.changed / live.achanged), on the
loop that serves the pages, never from a loop of a wrapper's own.

Every write tells the user's open pages (memory/client/live.py): what was added, changed or
removed, so the memory page and the header indicator follow without a reload.

`timeout` (seconds) is the call's one deadline; MCP_CALL_TIMEOUT when not given.
Errors: MemoryDisabled (MCP_MEMORY_ENABLED=false), MemoryUnavailable (server down, slow
or failed to start; its message is safe for users, its `detail` for logs and staff),
MemoryInputError, MemoryNotFound. (A user's own "memory off" is checked by the views, the
turn and the saving paths: MemoryOff.) memory_stats() and
memory_status() report those states instead of raising, for the header indicator.
"""

from __future__ import annotations

import logging
import re

from asgiref.sync import async_to_sync, sync_to_async

from ikario_rag import contract
from memory.client import judge, live, mcp
from memory.client import validation as check
from memory.client.errors import (
    MemoryDisabled,
    MemoryInputError,
    MemoryNotFound,
    MemoryOff,
    MemoryServiceError,
    MemoryToolError,
    MemoryUnavailable,
)
from memory.models import MemorySettings

logger = logging.getLogger("memory.client.services")

# How ikario_rag words "no such memory" ("unknown memory id(s): ...", "... not found").
_NOT_FOUND = re.compile(r"unknown (memory )?id|not found|no such memory", re.IGNORECASE)


# --- calling the server ------------------------------------------------------------


def _ready(arguments: dict) -> dict:
    if not mcp.memory_enabled():
        raise MemoryDisabled()
    return {k: v for k, v in arguments.items() if v is not None}


def _refused(exc: MemoryToolError, arguments: dict, main_field: str) -> MemoryServiceError:
    # The server's own "memory unavailable: <one line>" (a damaged database, the model
    # still loading...): its state, not the request, and safe to show as it is.
    if exc.message.startswith("memory unavailable"):
        return MemoryUnavailable(exc.message)
    # We validated first, so a refusal is about the content itself (e.g. only a
    # <private> span, or an unknown id): name the argument it is about.
    if _NOT_FOUND.search(exc.message):
        return MemoryNotFound(exc.message)
    field = next((name for name in arguments if name in exc.message), main_field)
    return MemoryInputError(field, exc.message)


def _call(tool: str, arguments: dict, *, main_field: str, timeout=None) -> dict:
    arguments = _ready(arguments)
    try:
        client = mcp.get_client(arguments.get("namespace"))
        return client.call_tool(tool, arguments, timeout=timeout)
    except MemoryToolError as exc:
        raise _refused(exc, arguments, main_field) from None


async def _acall(tool: str, arguments: dict, *, main_field: str, timeout=None) -> dict:
    arguments = _ready(arguments)
    try:
        client = mcp.get_client(arguments.get("namespace"))
        return await client.acall_tool(tool, arguments, timeout=timeout)
    except MemoryToolError as exc:
        raise _refused(exc, arguments, main_field) from None


# --- the memory, per user ----------------------------------------------------------
# Each tool: `_<tool>_call` checks the arguments once and says which argument a refusal
# is about; the sync and async functions below only send it.


def _search_memories_call(
    user,
    query,
    n_results,
    filter_category,
    kinds,
    tags,
    mode,
    date_from=None,
    date_to=None,
    subjects=None,
    subcategory=None,
    recent_days=None,
):
    arguments = {
        "namespace": check.namespace(user),
        "query": check.text("query", query, max_length=contract.MAX_QUERY),
        "n_results": check.integer("n_results", n_results),
        "filter_category": check.choice(
            "filter_category", filter_category, contract.CATEGORIES, allow_all=True
        ),
        "kinds": check.kinds("kinds", kinds),
        "tags": check.labels("tags", tags),
        "mode": check.choice("mode", mode, contract.MODES),
        "date_from": check.iso_date("date_from", date_from),
        "date_to": check.iso_date("date_to", date_to),
        "subjects": check.labels("subjects", subjects),
        "subcategory": check.choice("subcategory", subcategory, contract.ALL_SUBCATEGORIES),
        "recent_days": None
        if recent_days is None
        else check.integer("recent_days", recent_days, high=contract.MAX_RECENT_DAYS),
    }
    return "search_memories", arguments, "query"


async def asearch_memories(
    *,
    user,
    query,
    n_results=5,
    filter_category=None,
    kinds=None,
    tags=None,
    mode=None,
    timeout=None,
    date_from=None,
    date_to=None,
    subjects=None,
    subcategory=None,
    recent_days=None,
) -> dict:
    """Memories for `query`, best first: {"results": [record + relevance_score], "mode_used"}.
    `subjects`: only memories about one of them (labelled so, or naming it); `subcategory`:
    only self/goal memories of it; `recent_days`: what happened earlier left out
    (contract.EPISODIC_KINDS; facts and the like stay)."""
    tool, arguments, field = _search_memories_call(
        user,
        query,
        n_results,
        filter_category,
        kinds,
        tags,
        mode,
        date_from,
        date_to,
        subjects,
        subcategory,
        recent_days,
    )
    return await _acall(tool, arguments, main_field=field, timeout=check.timeout(timeout))


search_memories = async_to_sync(asearch_memories)


def _add_thought_call(user, content, context):
    arguments = {
        "namespace": check.namespace(user),
        "content": check.text("content", content, max_length=contract.MAX_CONTENT),
        "context": check.context(context),
    }
    return "add_thought", arguments, "content"


def _stored(results: list[dict]) -> dict:
    """What a write of new memories changed: ids added, ids they replaced."""
    fresh = [r for r in results if r.get("status") in ("created", "updated", "restored")]
    return {
        "added": [r.get("id") for r in fresh],
        "removed": [r.get("replaced_id") for r in fresh if r.get("replaced_id")],
    }


def add_thought(*, user, content, context=None, timeout=None) -> dict:
    """Store one memory: {"id", "status": created|updated|duplicate, "replaced_id"?}."""
    tool, arguments, field = _add_thought_call(user, content, context)
    result = _call(tool, arguments, main_field=field, timeout=check.timeout(timeout))
    live.changed(user=user, **_stored([result]))
    return result


async def aadd_thought(*, user, content, context=None, timeout=None) -> dict:
    tool, arguments, field = _add_thought_call(user, content, context)
    result = await _acall(tool, arguments, main_field=field, timeout=check.timeout(timeout))
    await live.achanged(user=user, **_stored([result]))
    return result


def add_thoughts(*, user, items, timeout=None) -> dict:
    """Store several memories in one call, in order: each item {"content", "context"?}.

    Returns {"ids", "created", "updated", "duplicates", "results": [{"id", "status",
    "replaced_id"?}]}, one result per item. Background jobs write through here.
    """
    if not isinstance(items, list) or not 1 <= len(items) <= contract.MAX_BATCH:
        raise MemoryInputError("items", f"must list 1 to {contract.MAX_BATCH} memories")
    checked = []
    for pos, item in enumerate(items):
        if not isinstance(item, dict):
            raise MemoryInputError(f"items[{pos}]", "must be an object")
        checked.append(
            {
                "content": check.text(
                    f"items[{pos}].content", item.get("content"), max_length=contract.MAX_CONTENT
                ),
                "context": check.context(item.get("context")),
            }
        )
    arguments = {"namespace": check.namespace(user), "items": checked}
    result = _call("add_thoughts", arguments, main_field="items", timeout=check.timeout(timeout))
    live.changed(user=user, **_stored(result.get("results") or []))
    return result


def trace_concept_evolution(*, user, concept, limit=10) -> dict:
    """How a concept changed over time: {"timeline": [{id, date, content, evolution}]}."""
    arguments = {
        "namespace": check.namespace(user),
        "concept": check.text("concept", concept, max_length=contract.MAX_TOPIC),
        "limit": check.integer("limit", limit),
    }
    return _call("trace_concept_evolution", arguments, main_field="concept")


def check_consistency(*, user, statement) -> dict:
    """How a statement fits the memory: {"verdict", "consistency_score", "contradictions",
    "supporting", "undetermined", "judged_by"}; the rules' pairs judged by a model when one
    is configured (memory/client/judge.py)."""
    arguments = {
        "namespace": check.namespace(user),
        "statement": check.text("statement", statement, max_length=contract.MAX_QUERY),
    }
    result = _call("check_consistency", arguments, main_field="statement")
    name = user.get_full_name() or user.get_username()
    return judge.judged(arguments["statement"], result, user_name=name)


def get_memories(*, user, ids, with_history=False) -> dict:
    """Some of this user's memories by id: {"memories": [record]} (unknown ids left out);
    `with_history`: each with all its earlier versions (for an undo or an export), read a
    reply's worth at a time (ikario_rag/replies.py)."""
    arguments = {
        "namespace": check.namespace(user),
        "ids": check.memory_ids("ids", ids, most=contract.MAX_IDS),
        "with_history": check.flag("with_history", with_history) or None,
    }
    found = _call("get_memories", arguments, main_field="ids")
    memories = list(found.get("memories") or [])
    left_out = found.get("left_out") or []
    while left_out:  # each reply holds at least one record: this ends
        more = _call("get_memories", {**arguments, "ids": left_out}, main_field="ids")
        memories.extend(more.get("memories") or [])
        left_out = more.get("left_out") or []
    if with_history:
        memories = [whole_history(user=user, record=m) for m in memories]
    return {**found, "memories": memories, "left_out": []}


def whole_history(*, user, record: dict) -> dict:
    """`record` with every earlier version: a reply carries only its newest ones
    (`history_offset` says where they start); the older are read a part at a time."""
    record = dict(record)
    start = record.pop("history_offset", 0) or 0
    record.pop("history_total", None)
    older: list = []
    while len(older) < start:
        arguments = {
            "namespace": check.namespace(user),
            "ids": [record["id"]],
            "with_history": True,
            "history_offset": len(older),
        }
        part = _call("get_memories", arguments, main_field="ids")["memories"][0]["history"]
        if not part:
            break
        older.extend(part[: start - len(older)])
    record["history"] = older + list(record.get("history") or [])
    return record


# The memory page's socket reads whole records (every version) as the page does.
aget_memories = sync_to_async(get_memories, thread_sensitive=False)


def get_memory(*, user, memory_id) -> dict:
    """One memory record of this user's (through get_memories), or MemoryNotFound."""
    memory_id = check.memory_id(memory_id)
    for record in get_memories(user=user, ids=[memory_id]).get("memories") or []:
        if record.get("id") == memory_id:
            return record
    raise MemoryNotFound(f"no memory {memory_id!r}")


def _delete_memory_call(user, memory_id, reason):
    arguments = {
        "namespace": check.namespace(user),
        "id": check.memory_id(memory_id),
        "reason": check.text("reason", reason or "", max_length=contract.MAX_REASON, required=False)
        or "",
    }
    return "delete_memory", arguments, "id"


def _deleted(result: dict, memory_id) -> dict:
    if not result.get("deleted"):
        raise MemoryNotFound(f"no memory {memory_id!r}")
    return result


def delete_memory(*, user, memory_id, reason="") -> dict:
    """Delete one memory of this user's, by id: {"deleted": true}, or MemoryNotFound."""
    tool, arguments, field = _delete_memory_call(user, memory_id, reason)
    result = _deleted(_call(tool, arguments, main_field=field), memory_id)
    live.changed(user=user, removed=[arguments["id"]])
    return result


async def adelete_memory(*, user, memory_id, reason="") -> dict:
    tool, arguments, field = _delete_memory_call(user, memory_id, reason)
    result = _deleted(await _acall(tool, arguments, main_field=field), memory_id)
    await live.achanged(user=user, removed=[arguments["id"]])
    return result


def forget(*, user, topic, min_score=0.5, dry_run=False) -> dict:
    """Remove the memories about a topic: {"removed": [{id, content}]} (none with dry_run)."""
    arguments = {
        "namespace": check.namespace(user),
        "topic": check.text("topic", topic, max_length=contract.MAX_TOPIC),
        "min_score": check.score("min_score", min_score),
        "dry_run": check.flag("dry_run", dry_run),
    }
    result = _call("forget", arguments, main_field="topic")
    if not arguments["dry_run"] and result.get("removed"):
        live.changed(user=user, removed=[m.get("id") for m in result["removed"]])
    return result


def _get_recent_memories_call(user, limit, kinds):
    arguments = {
        "namespace": check.namespace(user),
        "limit": check.integer("limit", limit),
        "kinds": check.kinds("kinds", kinds),
    }
    return "get_recent_memories", arguments, "limit"


async def aget_recent_memories(*, user, limit=10, kinds=None) -> dict:
    """This user's latest memories, newest first: {"memories": [record]}."""
    tool, arguments, field = _get_recent_memories_call(user, limit, kinds)
    return await _acall(tool, arguments, main_field=field)


get_recent_memories = async_to_sync(aget_recent_memories)


# --- the memory page: browse, edit, put back (undo, import), reset --------------------


def list_memories(
    *,
    user,
    offset=0,
    limit=20,
    kinds=None,
    category=None,
    tags=None,
    date_from=None,
    date_to=None,
    source_prefix=None,
) -> dict:
    """A page of this user's memories, newest first: {"memories": [record + history], "total"}
    (each record's newest versions; whole_history has them all). A page the server cut
    short to keep its reply small is completed from where it stopped."""
    arguments = {
        "namespace": check.namespace(user),
        "offset": check.integer("offset", offset, low=0, high=contract.MAX_OFFSET),
        "limit": check.integer("limit", limit),
        "kinds": check.kinds("kinds", kinds),
        "category": check.choice("category", category, contract.CATEGORIES, allow_all=True),
        "tags": check.labels("tags", tags),
        "date_from": check.iso_date("date_from", date_from),
        "date_to": check.iso_date("date_to", date_to),
        "source_prefix": check.text(
            "source_prefix", source_prefix, max_length=contract.MAX_SOURCE, required=False
        ),
    }
    page = _call("list_memories", arguments, main_field="offset")
    memories = list(page.get("memories") or [])
    after = page.get("next_offset")
    while after is not None and len(memories) < arguments["limit"]:
        more = {**arguments, "offset": after, "limit": arguments["limit"] - len(memories)}
        rest = _call("list_memories", more, main_field="offset")
        memories.extend(rest.get("memories") or [])
        after = rest.get("next_offset") if rest.get("memories") else None
    return {**page, "memories": memories, "next_offset": after}


def update_memory(*, user, memory_id, content=None, category=None, tags=None) -> dict:
    """Edit one memory in place (same id, re-indexed, the old version kept in its history):
    {"id", "status": updated|unchanged}, or MemoryNotFound."""
    arguments = {
        "namespace": check.namespace(user),
        "id": check.memory_id(memory_id),
        "content": check.text("content", content, max_length=contract.MAX_CONTENT, required=False),
        "category": check.choice("category", category, contract.CATEGORIES),
        "tags": check.labels("tags", tags),
    }
    result = _call("update_memory", arguments, main_field="content")
    if result.get("status") == "updated":
        live.changed(user=user, updated=[arguments["id"]])
    return result


def restore_memories(*, user, memories, timeout=None) -> dict:
    """Put memories back as list_memories gave them (an undo, an import): each keeps its id
    when free, its dates, labels, source and history; a text already held is skipped.
    {"ids", "restored", "duplicates", "expired", "results"}."""
    if not isinstance(memories, list) or not 1 <= len(memories) <= contract.MAX_BATCH:
        raise MemoryInputError("memories", f"must list 1 to {contract.MAX_BATCH} memories")
    for pos, record in enumerate(memories):
        if not isinstance(record, dict):
            raise MemoryInputError(f"memories[{pos}]", "must be an object")
    arguments = {"namespace": check.namespace(user), "memories": memories}
    result = _call(
        "restore_memories", arguments, main_field="memories", timeout=check.timeout(timeout)
    )
    live.changed(user=user, **_stored(result.get("results") or []))
    return result


def forget_all(*, user, timeout=None) -> dict:
    """Delete every memory of this user's, for good: {"deleted": n}."""
    namespace = check.namespace(user)
    result = _call(
        "forget_all",
        {"namespace": namespace, "confirm": namespace},
        main_field="confirm",
        timeout=check.timeout(timeout),
    )
    live.changed(user=user, reset=True)
    return result


def wait_until_ready(timeout: float | None = None) -> str:
    """Connect to the memory server and wait for it (commands and scripts, not views: a
    server still starting may take longer than one call's timeout)."""
    if not mcp.memory_enabled():
        return "disabled"
    mcp.get_client().wait_connected(check.timeout(timeout))
    return memory_status()


def connect_memory() -> None:
    """Connect to every memory server now, in the background (the web process at start,
    ikario_clone/web.py): the first message after a start then never waits."""
    if mcp.memory_enabled():
        mcp.connect_all()


def memory_status(namespace: str | None = None) -> str:
    """'connected', 'starting', 'disconnected' or 'disabled' (starts the client if needed):
    of the server holding `namespace` (with several), else of the first one."""
    if not mcp.memory_enabled():
        return "disabled"
    return mcp.get_client(namespace).status()


def memory_state(*, user) -> dict:
    """What this process knows of the memory's state without asking the server (the
    header says a pause or an outage at once): memory_stats' fields, counts None."""
    namespace = check.namespace(user)
    stats = {
        "connected": False,
        "status": memory_status(namespace),
        "total_memories": None,
        "last_save": None,
        "by_category": {},
        "by_kind": {},
        "error": "",
    }
    if stats["status"] == "disabled":
        stats["error"] = MemoryDisabled().message
    elif not MemorySettings.is_on_for(user):
        stats.update(status="off", error=MemoryOff().message)
    elif stats["status"] == "connected":
        stats["connected"] = True
    return stats


def memory_stats(*, user) -> dict:
    """What the header indicator shows; never raises for a down, disabled or off memory.

    {"connected", "status", "total_memories", "last_save", "by_category", "by_kind",
     "error"}: status is connected, saving_fails (connected, but a save would fail: error
    says "saving fails: <why>"), disconnected (also: connected to a server that cannot
    serve), disabled (on this server) or off (the user turned it off); counts are this
    user's only, None when the server could not be asked; error is safe to show.
    """
    namespace = check.namespace(user)
    stats = memory_state(user=user)
    if stats["status"] in ("disabled", "off", "starting"):
        # Starting: a call would wait for the connection; the indicator asks again soon.
        return stats
    try:
        found = _call("memory_stats", {"namespace": namespace}, main_field="namespace")
    except MemoryServiceError as exc:
        stats.update(connected=False, status=memory_status(namespace), error=exc.message)
        if isinstance(exc, MemoryUnavailable):
            # Connected to a server that cannot serve (a damaged database): not usable.
            stats["status"] = "disconnected"
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
    saving = found.get("saving") or "ok"
    if saving != "ok":
        # Connected, but a save would fail (the disk is full, the index was removed...).
        stats.update(status="saving_fails", error=f"saving {saving}")
    return stats


def server_stats() -> dict:
    """The whole index, every namespace, and the server's `health` (staff only: the admin's
    memory health page, `manage.py memory_stats`)."""
    return _call("memory_stats", {}, main_field="namespace")


def server_health() -> dict:
    """What staff see of the memory: the client's state and, when the server answers, its
    `health` object and counts, with every detail a user never sees (last connection
    error, the server's reason and SQLite error). Never raises."""
    health = {"status": memory_status(), "client": {}, "server": None, "error": ""}
    if health["status"] == "disabled":
        return health
    client = mcp.get_client()
    health["client"] = {
        "state": client.state,
        "target": client.target.server_url,
        "connections": client.connections,
        "failures": client.failures,
        "last_error": client.last_error,
    }
    try:
        health["server"] = server_stats()
    except MemoryServiceError as exc:
        health["error"] = "; ".join(part for part in (exc.message, exc.detail) if part)
    return health
