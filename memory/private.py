"""`<private>…</private>` spans, removed before memory computes anything from a text.

TODO(lead): once the ikario_rag branch is merged, replace this module's body by its strict
pure-module version (`from ikario_rag.private import strip as strip_private`: entity-encoded
and NFKC forms, invisible characters inside the word) and allow `ikario_rag.private` in
tests/test_architecture.py's MEMORY_MAY_IMPORT. Until then this local equivalent handles
nesting (depth counted), any casing, spaces and attributes inside the brackets, and an
unclosed span, which hides the rest of the text (leaking the tail would be worse).
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
        closing = marker.group(1) is not None
        if depth == 0:
            kept.append(text[position : marker.start()])
        if closing:
            depth = max(depth - 1, 0)
        else:
            depth += 1
        if depth == 0:
            kept.append(" ")
            position = marker.end()
    if depth == 0:
        kept.append(text[position:])
    return "".join(kept)
