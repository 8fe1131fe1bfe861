"""The no-echo rule: what Ikario says back is not something learnt, nor kept.

A memory recalled into a conversation (its retrieval log says which) and said again there
is an echo: extraction drops a fact that restates one (memory/learning/extraction.py), and a
conversation's backup (memory/learning/backup.py) drops the lines of an answer that restate one.
The offline responder's answers are echoes whole: the user's words and the recalled
memories said back, nothing of its own (chat/offline.py); a backup keeps the user's words.
"""

from __future__ import annotations

from chat.models import Conversation, Message
from chat.offline import LABEL as OFFLINE_RESPONDER
from ikario_rag import contract
from ikario_rag.facts import Relation, Statement, compare
from memory.client import services
from memory.client.errors import MemoryNotFound
from memory.models import MemoryRetrieval


def echoes(content: Statement | str, recalled: list[Statement]) -> bool:
    """`content` (a fact, a line) says nothing a recalled memory does not (ikario_rag's
    one rule of the same fact): a correction ("no longer", another number or name) or a
    fact that says more is not an echo."""
    mine = content if isinstance(content, Statement) else Statement(content)
    if not mine.term_set:
        return False
    return any(compare(mine, other) is Relation.SAME for other in recalled)


def recalled_in(conversation: Conversation) -> list[Statement]:
    """Each memory auto-recall gave this conversation (its retrieval log), as a statement."""
    ids: list[str] = []
    for logged in MemoryRetrieval.objects.filter(conversation=conversation).values_list(
        "memories", flat=True
    ):
        ids += [m.get("id") for m in logged or [] if m.get("id") and m.get("id") not in ids]
    return [Statement(str(m.get("content") or "")) for m in still_there(conversation.user, ids)]


def still_there(user, ids: list[str]) -> list[dict]:
    """The records of these memories of the user's that still exist: one deleted or replaced
    since it was recalled is left out, and never stops learning or health."""
    found: list[dict] = []
    for start in range(0, len(ids), contract.MAX_IDS):
        try:
            got = services.get_memories(user=user, ids=ids[start : start + contract.MAX_IDS])
        except MemoryNotFound:  # none of these exists any more
            continue
        found += got.get("memories") or []
    return found


def answer_lines(text: str, *, model: str) -> str:
    """What of an answer may be Ikario's own: nothing of the offline responder's, else its
    lines (white space folded in each), so that an echoing line can be told apart."""
    if model == OFFLINE_RESPONDER:
        return ""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def without_echoes(role: str, text: str, recalled: list[Statement]) -> str:
    """An answer's `text` without the lines that restate a recalled memory (the user's
    words are theirs, whatever they say)."""
    if role != Message.Role.ASSISTANT or not recalled:
        return text
    return "\n".join(line for line in text.split("\n") if not echoes(line, recalled))
