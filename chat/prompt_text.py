"""The one neutralising pass for text the app puts into the system prompt.

The system prompt is made of delimited blocks (`<retrieved_memories>`, the profile,
`<conversation_summary>`...). Text from a user, a memory, a summary or a title must never
close the block it sits in, open another, or forge one. Removing tags is not enough: one
pass over "</retrieved_<retrieved_memories>memories>" leaves a working closing tag. So the
characters themselves are replaced, in one linear pass whose output holds none of them (a
fixed point by construction): angle brackets, and their compatibility forms a model may read
alike (NFKD: ＜ ﹤ ≮). Every block chat or memory builds goes through `without_tags`.
"""

from __future__ import annotations

_TAG_CHARS = str.maketrans(
    {"<": "‹", "\uff1c": "‹", "\ufe64": "‹", "\u226e": "‹"}
    | {">": "›", "\uff1e": "›", "\ufe65": "›", "\u226f": "›"}
)


def without_tags(text: str) -> str:
    """`text` unable to open or close any tag of the system prompt (line breaks kept)."""
    return str(text or "").translate(_TAG_CHARS)
