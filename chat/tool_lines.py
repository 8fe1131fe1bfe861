"""An earlier tool call in one line: the tool, what it was asked, what it found.

What a conversation keeps of its tool calls (Message.tool_calls) once the transcript is
cut (chat/history.py: the tools used and their key findings) and what the conversation's
own summary lists as done (chat/summaries.py). What the user marked private never shows.
"""

from __future__ import annotations

import json

from chat.private import strip_private

TOOL_ASKED_CHARS = 60
TOOL_FINDING_CHARS = 160


def tool_line(call: dict) -> str:
    """One earlier tool call in a line: the tool, what it was asked, what it found
    ("- search_memories 'ski' → Searched memories for 'ski' — 2 results: Alice skis…")."""
    name = str(call.get("name") or "tool")
    asked = _asked(call.get("input"))
    said = str(call.get("summary") or "").strip()
    found = _findings(call.get("result"))
    if call.get("is_error"):
        outcome = "failed" + (f": {said}" if said else "")
    else:
        outcome = ": ".join(part for part in (said, found) if part) or "done"
    line = f"- {name}{' ' + asked if asked else ''} → {outcome}"
    return " ".join(strip_private(line).split())


def _asked(data) -> str:
    """The call's main argument, quoted (a query, a content, a topic), else its arguments."""
    if not isinstance(data, dict) or not data:
        return ""
    for key in ("query", "content", "topic", "statement", "concept"):
        if isinstance(data.get(key), str):
            return "'" + _cut(strip_private(data[key]), TOOL_ASKED_CHARS) + "'"
    return _cut(json.dumps(data, ensure_ascii=False, sort_keys=True), TOOL_ASKED_CHARS)


def _findings(result) -> str:
    """What a result holds, shortly: the texts of the first things it lists."""
    try:
        data = json.loads(result) if isinstance(result, str) else None
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return _cut(str(result or ""), TOOL_FINDING_CHARS) if result else ""
    for value in data.values():
        if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            texts = [_text_of(v) for v in value]
            return _cut("; ".join(t for t in texts if t), TOOL_FINDING_CHARS)
    return ""


def _text_of(item: dict) -> str:
    for key in ("content", "passage", "gist", "title", "chat"):
        if isinstance(item.get(key), str) and item[key].strip():
            return item[key]
    return ""


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
