"""Newest wins, with history: a learnt fact that changes a one-valued slot (where the user
lives, their job, diet...; memory/learning/person/about.py) or ends a value ("no longer eats
meat") supersedes the stored fact it changes.

It is written with `context.replaces` naming that fact (docs/MEMORY_TOOLS.md, "Superseding"):
the memory server removes the old one from what is searched and recalled, and keeps it, dated,
in the new one's history. The model names what a fact replaces itself (its K ids); these rules
do it offline, and catch what the model missed. Facts that accumulate (languages, allergies,
hobbies, children) have no slot and replace nothing.
"""

from __future__ import annotations

import re

from ikario_rag import contract
from ikario_rag.text import fold
from memory.client import services
from memory.learning.person import about

FACT_KINDS = ["self", "preference", "goal", "fact"]
CANDIDATES = 20
# Words that say nothing of what a fact is about.
_BARE_WORDS = (
    "the user l'utilisateur l'utilisatrice is a an of to in at has have est un une le la les "
    "de du des no longer not anymore any more ne plus n'est pas stopped quit"
)
_BARE = frozenset(_BARE_WORDS.split())
_WORD = re.compile(r"[\w'-]+")


def _words(content: str) -> set[str]:
    return {w for w in _WORD.findall(fold(content)) if w not in _BARE and len(w) > 2}


def replaced_by(content: str, stored: list[dict]) -> str | None:
    """The id of the stored fact `content` supersedes, among `stored` (most relevant first):
    the one of the same slot holding another value, or the one a negation ends."""
    slot = about.slot_of(content)
    said = " ".join(fold(content).split()).rstrip(".")
    for record in stored:
        old = str(record.get("content") or "")
        if " ".join(fold(old).split()).rstrip(".") == said:
            return None  # said again: the server's dedup keeps one
        if slot and about.slot_of(old) == slot:
            return record.get("id")
    if about.negates(content):
        for record in stored:
            old = str(record.get("content") or "")
            if not about.negates(old) and _words(old) and _words(old) <= _words(content):
                return record.get("id")
    return None


def superseding(user, items: list[dict], *, timeout: float | None = None) -> list[dict]:
    """`items` (add_thoughts items), each that changes or ends a stored fact marked with
    `replaces`; those the model already marked are kept as they are."""
    for item in items:
        context = item.setdefault("context", {})
        content = item["content"]
        if context.get("replaces") or not (about.slot_of(content) or about.negates(content)):
            continue
        query = f"{content} {' '.join(about.question_words(content))}"
        found = services.search_memories(
            user=user,
            query=query[: contract.MAX_QUERY],
            kinds=FACT_KINDS,
            n_results=CANDIDATES,
            timeout=timeout,
        )
        replaced = replaced_by(content, found.get("results") or [])
        if replaced:
            context["replaces"] = replaced
    return items
