"""Auto-recall's recency window (90 days by default): what happened long ago is not brought
up unasked.

Automatic recall searches with a window of MEMORY_RECALL_WINDOW_DAYS days: the memories of
what happened (contract.EPISODIC_KINDS: saved exchanges, summaries, thoughts, observations)
dated earlier are left out, while facts, preferences, Ikario's self and goals and notes stay
whatever their age (they end by their ttl, not by growing old). Old memories are still found
when asked for explicitly:

* every search someone asks for has no window: Claude's search_memories tool, the user's
  searches (the memory page, the sidebar, the API), the commands;
* a message that names a time ("last year", "in 2023", "three months ago", "l'an dernier",
  "il y a deux ans", "tu te souviens quand…") is recalled without the window: the user is
  asking about then.
"""

from __future__ import annotations

import re

from django.conf import settings

# A time the message names, English or French: a year, "… ago" / "il y a …", "last/l'an
# dernier…", a season or month of an earlier year, or the user asking to remember.
_NAMES_A_TIME = re.compile(
    r"\b(?:1[89]\d\d|20\d\d)\b"
    r"|\bago\b|\bil\s+y\s+a\b"
    r"|\b(?:last|previous|past)\s+(?:year|years|month|months|summer|winter|spring|autumn|fall)\b"
    r"|\b(?:years?|months?)\s+(?:before|earlier)\b"
    r"|\bl['’]?(?:an|année)\s+(?:dernier|dernière|passé|passée)\b"
    r"|\b(?:l['’]été|l['’]hiver|le\s+printemps|l['’]automne)\s+dernier\b"
    r"|\b(?:long\s+ago|a\s+while\s+back|back\s+when|autrefois|jadis|à\s+l'époque)\b"
    r"|\b(?:do\s+you\s+)?remember\s+when\b|\bte\s+(?:souviens|rappelles)[- ]tu\b"
    r"|\btu\s+te\s+(?:souviens|rappelles)\b",
    re.IGNORECASE,
)


def names_a_time(text: str) -> bool:
    return bool(_NAMES_A_TIME.search(text or ""))


def recall_window(query: str) -> int | None:
    """The window (days) automatic recall searches `query` with; None: none (the setting is
    0, or the query names a time)."""
    days = settings.MEMORY_RECALL_WINDOW_DAYS
    if days <= 0 or names_a_time(query):
        return None
    return days
