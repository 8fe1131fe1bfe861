"""A tool call as people read it: what it was asked and what it found, never raw JSON.

Any tool, whoever offers it: the input becomes labelled lines ("Query: ski trip"), the
result the items it holds (each by its text: a memory's content, a chat's passage or
title), its other fields as labelled lines, or its plain text when it is not JSON (an
error). The templates escape every piece.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from django.utils.translation import gettext as _

LINE_CHARS = 300  # of one item or value
ITEMS_SHOWN = 20
# Where an item keeps the text a reader wants, in order of preference.
TEXT_KEYS = ("content", "passage", "text", "summary", "gist", "title", "chat", "name")


@dataclass
class Readable:
    input: list[tuple[str, str]] = field(default_factory=list)
    items: list[str] | None = None  # None: the result holds no list of items
    more_items: int = 0
    fields: list[tuple[str, str]] = field(default_factory=list)
    text: str = ""


def _cut(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def label(key) -> str:
    return str(key).replace("_", " ").strip().capitalize()


def value_text(value) -> str:
    if value is None or value == "" or value == []:
        return "—"
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, dict):
        return _cut(", ".join(f"{label(k)}: {value_text(v)}" for k, v in value.items()))
    if isinstance(value, list):
        return _cut(", ".join(item_text(v) if isinstance(v, dict) else str(v) for v in value))
    return _cut(str(value))


def item_text(item: dict) -> str:
    """One found item by its text, with its date when it has one."""
    main = next((item[k] for k in TEXT_KEYS if isinstance(item.get(k), str) and item[k]), None)
    if main is None:
        return value_text({k: v for k, v in item.items() if k != "id"})
    when = item.get("date") or item.get("last_active")
    suffix = f" ({str(when)[:10]})" if isinstance(when, str) and when else ""
    return _cut(main) + suffix


def _complete_items(text: str) -> list[dict]:
    """The whole objects at the start of a JSON result's first list, when the result was
    cut short: '{"results": [{...}, {...}, {"id": "x", "cont' gives the first two."""
    if not text.startswith("{") or "[" not in text:
        return []
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    found: list[dict] = []
    while len(found) < ITEMS_SHOWN:
        while position < len(text) and text[position] in " ,\n\t":
            position += 1
        try:
            item, position = decoder.raw_decode(text, position)
        except ValueError:
            break
        if not isinstance(item, dict):
            break
        found.append(item)
    return found


def tool_call(call: dict) -> Readable:
    readable = Readable()
    data = call.get("input")
    if isinstance(data, dict):
        readable.input = [(label(k), value_text(v)) for k, v in data.items()]
    result = call.get("result")
    if not result:
        return readable
    try:
        parsed = json.loads(result) if isinstance(result, str) else result
    except ValueError:
        salvaged = _complete_items(result)
        if salvaged:
            # A long result is stored cut (chat/turn.py): show the items it holds whole.
            readable.items, readable.more_items = [item_text(v) for v in salvaged], 1
        elif result.lstrip().startswith(("{", "[")):
            readable.text = _("The result is too long to show.")
        else:
            readable.text = _cut(result, 2000)
        return readable
    if not isinstance(parsed, dict):
        readable.text = value_text(parsed)
        return readable
    for key, value in parsed.items():
        if (
            readable.items is None
            and isinstance(value, list)
            and all(isinstance(v, dict) for v in value)
        ):
            readable.items = [item_text(v) for v in value[:ITEMS_SHOWN]]
            readable.more_items = max(0, len(value) - ITEMS_SHOWN)
        else:
            readable.fields.append((label(key), value_text(value)))
    return readable
