"""What gets indexed for a memory: the text embedded by MiniLM and matched by FTS5.

The stored `content` is returned verbatim; the indexed text adds what helps retrieval:
the subjects/concepts/tags a client attached (names a turn does not repeat), and, for a
conversation turn, the turns just before and after it in the same session (same namespace,
same `date`): an answer ("Yes, last Friday!") is only findable through the question before
it, a remark through the reply after it. On LoCoMo this context took hybrid recall@10 from
0.687 (turn alone) to 0.745 (previous only: 0.726); two turns each side or shorter excerpts
did worse (docs/BENCHMARKS.md).
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
    following: str | None = None,
) -> str:
    labels = [*subjects, *concepts, *tags]
    parts = [content]
    if labels:
        parts.append(" ".join(labels))
    if previous:
        parts.append(previous[:CONTEXT_CHARS])
    if following:
        parts.append(following[:CONTEXT_CHARS])
    return "\n".join(parts)


def with_following(search_text: str, following: str) -> str:
    """A stored turn's indexed text once the turn after it arrives."""
    return f"{search_text}\n{following[:CONTEXT_CHARS]}"
