"""The no-echo rule: what Ikario says back is not something learnt, nor kept.

A memory recalled into a conversation (its retrieval log says which) and said again there
is an echo: extraction drops a fact that restates one (memory/learning/extraction.py), and a
conversation's backup (memory/learning/backup.py) drops the lines of an answer that restate one.
The offline responder's answers are echoes whole: the user's words and the recalled
memories said back, nothing of its own (chat/offline.py); a backup keeps the user's words.
"""

from __future__ import annotations

import re
import unicodedata

import Stemmer  # PyStemmer (ikario_rag's too): "lives" and "live" are one word

from chat.models import Conversation, Message
from chat.offline import LABEL as OFFLINE_RESPONDER
from ikario_rag import contract
from memory.client import services
from memory.learning.tags import stop_words
from memory.models import MemoryRetrieval

# Who a fact is about says nothing of what it says.
_ABOUT_THE_USER = frozenset({"user", "utilisateur", "utilisatrice"})
# Share of their words two texts must have in common to say the same thing: "Alice is
# allergic to peanuts" / "The user is allergic to peanuts" share 2 of 3 stems; a fact that
# adds to the memory ("... and carries an EpiPen") shares fewer.
ECHO_OVERLAP = 0.6
_STEMMER = Stemmer.Stemmer("english")


_WORDS = re.compile(r"[a-z0-9]+")


def _stems(text: str) -> frozenset[str]:
    folded = unicodedata.normalize("NFKD", text.lower())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    stops = stop_words() | _ABOUT_THE_USER
    words = [w for w in _WORDS.findall(folded) if w not in stops and len(w) > 1]
    return frozenset(stem[:6] for stem in _STEMMER.stemWords(words))


def echoes(content: str, recalled: list[frozenset[str]]) -> bool:
    """`content` (a fact, a line) says again what one of the recalled memories says."""
    mine = _stems(content)
    if not mine:
        return False
    return any(len(mine & other) / len(mine | other) >= ECHO_OVERLAP for other in recalled)


def recalled_in(conversation: Conversation) -> list[frozenset[str]]:
    """The words of each memory auto-recall gave this conversation (its retrieval log)."""
    ids: list[str] = []
    for logged in MemoryRetrieval.objects.filter(conversation=conversation).values_list(
        "memories", flat=True
    ):
        ids += [m.get("id") for m in logged or [] if m.get("id") and m.get("id") not in ids]
    if not ids:
        return []
    found: list[dict] = []
    for start in range(0, len(ids), contract.MAX_IDS):
        some = ids[start : start + contract.MAX_IDS]
        got = services.get_memories(user=conversation.user, ids=some)
        found += got.get("memories") or []
    return [_stems(str(m.get("content") or "")) for m in found]


def answer_lines(text: str, *, model: str) -> str:
    """What of an answer may be Ikario's own: nothing of the offline responder's, else its
    lines (white space folded in each), so that an echoing line can be told apart."""
    if model == OFFLINE_RESPONDER:
        return ""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def without_echoes(role: str, text: str, recalled: list[frozenset[str]]) -> str:
    """An answer's `text` without the lines that restate a recalled memory (the user's
    words are theirs, whatever they say)."""
    if role != Message.Role.ASSISTANT or not recalled:
        return text
    return "\n".join(line for line in text.split("\n") if not echoes(line, recalled))
