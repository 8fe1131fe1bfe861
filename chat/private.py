"""`<private>…</private>` spans: what a user marks private stays in its message.

A message keeps its text (it is the user's own conversation), but nothing derived from it
for later use carries a private span: the summaries (stored, and sent to the summary
model) and what Claude's past-chat tools read out of other conversations. The rule of what
a span is (nesting, casing, spaces, attributes, entity-encoded forms, an unclosed span
hiding the rest) is the memory server's, `ikario_rag.private`: one definition for every
place that must not keep private text.
"""

from __future__ import annotations

from ikario_rag.private import strip as strip_private

__all__ = ["has_private", "strip_private"]


def has_private(text: str) -> bool:
    return strip_private(text) != text
