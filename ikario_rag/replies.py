"""Every reply of a tool that returns records stays small enough for any client to read.

A record holds up to 20,000 characters and up to 100 earlier versions of as many: one
memory edited 45 times made a 1.8 MB reply, past the MCP SDK client's 1 MiB limit on one
reply, and that call took the app's connection down for every user. So a reply carries
records up to REPLY_BYTES of JSON (the SDK sends it twice: structured and as text), always
at least one; a record's history up to HISTORY_BYTES, its newest versions, with
`history_total` and `history_offset` saying which part it is (get_memories' `history_offset`
reads the rest, a part at a time). The callers say what was left out (`next_offset`,
`left_out`). A reply that must name every memory it acted on (forget, check_consistency)
cuts their texts to previews instead; docs/MEMORY_TOOLS.md, "Replies are bounded".
"""

from __future__ import annotations

import json
from typing import Any

# Bytes of JSON: twice this, plus the text's escapes, stays well under 1 MiB.
REPLY_BYTES = 256 * 1024
HISTORY_BYTES = 64 * 1024
# What a listed memory's text is cut to when a reply must name them all (forget's
# removed memories, a consistency check's): 100 of them stay well within REPLY_BYTES.
PREVIEW_CHARS = 500


def json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())


def fitting(records: list[dict[str, Any]], budget: int = REPLY_BYTES) -> list[dict[str, Any]]:
    """The first records whose JSON fits in `budget` bytes; at least the first one."""
    kept: list[dict[str, Any]] = []
    used = 0
    for record in records:
        used += json_bytes(record) + 1
        if kept and used > budget:
            break
        kept.append(record)
    return kept


def history_part(
    record: dict[str, Any], offset: int | None = None, budget: int = HISTORY_BYTES
) -> dict[str, Any]:
    """`record` with the part of its history that fits in `budget` bytes: from `offset`
    on (at least one version), or without one, its newest versions."""
    history = record.get("history") or []
    if offset is None:
        newest = fitting(list(reversed(history)), budget) if history else []
        if newest and json_bytes(newest[0]) > budget:
            newest = []  # one version alone too large: read with history_offset
        part, start = list(reversed(newest)), len(history) - len(newest)
    else:
        start = min(offset, len(history))
        part = fitting(history[start:], budget) if start < len(history) else []
    return {**record, "history": part, "history_total": len(history), "history_offset": start}


def previewed(entries: list[dict[str, Any]], budget: int = REPLY_BYTES) -> list[dict[str, Any]]:
    """`entries` (each with a `content`) as they are if they fit in `budget` bytes, else
    with each content cut to PREVIEW_CHARS characters (ending in "…")."""
    if json_bytes(entries) <= budget:
        return entries
    return [
        {**e, "content": e["content"][: PREVIEW_CHARS - 1] + "…"}
        if len(e.get("content") or "") > PREVIEW_CHARS
        else e
        for e in entries
    ]
