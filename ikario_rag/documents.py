"""What gets indexed for a memory: the text embedded by MiniLM and matched by FTS5.

The stored `content` is returned verbatim; the indexed text adds what helps retrieval:
the subjects/concepts/tags a client attached (names a turn does not repeat), and, for a
conversation turn, the previous turn of the same session (same namespace, same `date`),
because an answer ("Yes, last Friday!") is only findable through the question before it.
"""

from __future__ import annotations

from collections.abc import Sequence

# How much of the previous turn is carried into a turn's indexed text (characters).
CONTEXT_CHARS = 300


def index_text(
    content: str,
    *,
    subjects: Sequence[str] = (),
    concepts: Sequence[str] = (),
    tags: Sequence[str] = (),
    previous: str | None = None,
) -> str:
    labels = [*subjects, *concepts, *tags]
    parts = [content]
    if labels:
        parts.append(" ".join(labels))
    if previous:
        parts.append(previous[:CONTEXT_CHARS])
    return "\n".join(parts)
