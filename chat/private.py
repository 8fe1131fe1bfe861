"""`<private>…</private>` spans: what a user marks private stays in its message.

A message keeps its text (it is the user's own conversation), but nothing derived from it
for later use carries a private span: the summaries (stored, and sent to the summary
model) and what Claude's past-chat tools read out of other conversations. Spans nest (the
depth is counted), markers may have any casing, spaces or attributes, and an unclosed span
hides the rest of the text: leaking the tail would be worse than losing it.
"""

from __future__ import annotations

import re

_MARKER = re.compile(r"<\s*(/)?\s*private\b[^>]*(?:>|$)", re.IGNORECASE)


def strip_private(text: str) -> str:
    """The text with every private span (markers included) replaced by a space."""
    if "private" not in text.lower():
        return text
    kept: list[str] = []
    depth = 0
    position = 0
    for marker in _MARKER.finditer(text):
        if depth == 0:
            kept.append(text[position : marker.start()])
        depth = max(depth - 1, 0) if marker.group(1) else depth + 1
        if depth == 0:
            kept.append(" ")
            position = marker.end()
    if depth == 0:
        kept.append(text[position:])
    return "".join(kept)


def has_private(text: str) -> bool:
    return strip_private(text) != text
