"""Auto-save's tags: capitalised words, long words, repeated words.

Computed on text whose <private> spans are already gone, after markup is removed (code,
URLs, HTML tags, Markdown link targets and emphasis), never from role labels. Stop words
of English and French (the stop-words package) never become tags, and a capitalised word
counts only inside a sentence: "This" opening one says nothing, "Chamonix" does.
Order: acronyms and names, then repeated words, then long words. A word longer than
LONGEST_WORD (a hash, a key) is no tag.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from ikario_rag import lexicon
from ikario_rag.text import fold

MAX_TAGS = 8
LONG_WORD = 9  # "mots > 8 caractères"
REPEATED = 2  # "mots répétés": twice or more
MIN_REPEATED_LENGTH = 4
# Longer than any word of a language: a hash, a key, a token (a SHA-512 is 128 characters,
# a JWT hundreds), never a subject, and past the contract's MAX_LABEL it would be refused.
LONGEST_WORD = 40

_CODE_BLOCK = re.compile(r"```.*?(?:```|$)|~~~.*?(?:~~~|$)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_URL = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_LINK_TARGET = re.compile(r"\]\([^)]*\)")
_HTML_TAG = re.compile(r"</?[A-Za-z][^>]*>")
_MARKUP = re.compile(r"[*_#>|~=\[\]]+")
# A word: letters first, then letters, digits, inner apostrophes or hyphens.
_WORD = re.compile(r"[^\W\d_](?:[\w]|['’-](?=\w))*")
# Between two words, what ends a sentence or a line: the next word's capital is grammar.
_SENTENCE_END = re.compile(r"[.!?:;\n]")
# Chat words that say nothing about a conversation's subject.
_CHAT_WORDS = {"user", "assistant", "claude", "ikario", "merci", "thanks", "thank", "please"}


@cache
def stop_words() -> frozenset[str]:
    """The stop words of both languages (folded), and chat words."""
    return lexicon.stop_words() | _CHAT_WORDS


def _plain(word: str) -> str:
    return fold(word)


def without_markup(text: str) -> str:
    for pattern in (_CODE_BLOCK, _INLINE_CODE, _URL, _LINK_TARGET, _HTML_TAG):
        text = pattern.sub(" ", text)
    return _MARKUP.sub(" ", text)


def extract_tags(*texts: str, limit: int = MAX_TAGS) -> list[str]:
    """Up to `limit` tags for these texts (each a message: a new one starts a sentence)."""
    acronyms: Counter[str] = Counter()
    names: Counter[str] = Counter()
    counts: Counter[str] = Counter()
    spelled: dict[str, str] = {}
    order: list[str] = []
    for text in texts:
        clean = without_markup(text)
        previous_end = 0
        for match in _WORD.finditer(clean):
            word = match.group()
            between = clean[previous_end : match.start()]
            opens_sentence = previous_end == 0 or _SENTENCE_END.search(between) is not None
            previous_end = match.end()
            key = _plain(word)
            if key in stop_words() or not 2 <= len(word) <= LONGEST_WORD:
                continue
            if key not in spelled:
                order.append(key)
            counts[key] += 1
            if len(word) >= 2 and word.isupper() and word.isalpha():
                acronyms[key] += 1
                spelled[key] = word
                continue
            if word[0].isupper() and not opens_sentence:
                names[key] += 1
                spelled[key] = word
            else:
                spelled.setdefault(key, word.lower())
    tags: list[str] = []

    def add(keys) -> None:
        for key in keys:
            if len(tags) >= limit:
                return
            if spelled[key] not in tags:
                tags.append(spelled[key])

    by_count = sorted(order, key=lambda k: -counts[k])  # stable: first seen first on ties
    add(k for k in by_count if k in acronyms or k in names)
    add(k for k in by_count if counts[k] >= REPEATED and len(k) >= MIN_REPEATED_LENGTH)
    add(k for k in order if len(k) >= LONG_WORD)
    return tags
