"""What auto-recall searches for: the user's message, and, when the message refers back to
what the user said before ("What could I cook for her?", "Il a quel problème déjà ?"), the
user's previous message of the conversation as well.

Only a message that refers back takes the earlier one along: a new subject ("Write a
limerick about penguins" after "Tell me about my sister") must not bring back what the
conversation was about before. Pure Python (no Django), so the benches use the same rule.
"""

from __future__ import annotations

import re

from ikario_rag.text import fold

# Words that point back to someone already named or to what was said (English, French).
# Left out: "it", "this", "that" ("thanks, that helped"), "le/la/les" (articles everywhere).
_REFERRING = frozenset(
    ["he", "him", "his", "she", "her", "hers", "they", "them", "their", "theirs", "again"]
    + ["il", "elle", "lui", "leur", "leurs", "eux", "ils", "elles", "deja"]
)
_WORD = re.compile(r"[a-z']+")
# The earlier message is context, not the question: only its beginning is searched with.
EARLIER_CHARS = 300


def _words(value: str) -> list[str]:
    return [w for token in _WORD.findall(fold(value)) for w in token.split("'") if w]


def refers_back(message: str) -> bool:
    return any(word in _REFERRING for word in _words(message))


def query_for(message: str, earlier: list[str]) -> str:
    """The text auto-recall searches for: `message`, followed by the user's last earlier
    message (`earlier`, oldest first) when the message refers back to it."""
    if earlier and refers_back(message):
        return f"{message}\n{earlier[-1][:EARLIER_CHARS]}"
    return message
