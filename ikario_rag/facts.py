"""Comparing two short statements: is one a restatement of the other (dedup)? Rules on
terms (lexicon.py), no LLM.

A statement is read as its terms (content words, stemmed, French mapped to English), the
people and things it is about (PEOPLE/THINGS terms: "my sister's husband" is about a
husband, not the sister), its names, numbers, days, months and places, and its polarity
(negated, or saying a habit ended).

Restatement (`restates`): never when the two differ in who or what they are about, in a
number, a day, a month, a place, a name, a relation word ("with" / "against") or polarity;
then a pair whose terms substitute one word for another ("red" / "blue", "Tom" / "Léa") is
two facts unless the two words are variants of one ("maths" / "mathematiques"); a pair
whose terms are equal or where one adds to the other ("broke his wrist" / "broke his wrist
skiing in February") is one fact when the cosine of their vectors is at least
RESTATEMENT_COSINE (measured on bench/quality/dedup_dev.json: restatements 0.74-0.99).

Whether two statements contradict each other is ikario_rag/consistency.py's (it reads
statements with this module's Statement).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ikario_rag import lexicon, text

# Cosine at or above which two statements with the same terms (or one adding to the other)
# are one fact: the lowest restatement of the dev set is 0.74, a refinement adding a date.
RESTATEMENT_COSINE = 0.72
# Words that set how two things relate: "with Marc" is not "against Marc".
_RELATIONAL = lexicon.words("with against without versus avec contre sans")


@dataclass
class Statement:
    content: str
    lang: str = field(init=False)

    def __post_init__(self) -> None:
        self.lang = lexicon.language(self.content)

    @cached_property
    def terms(self) -> list[str]:
        return lexicon.terms(self.content, self.lang, stops=lexicon.fact_stops())

    @cached_property
    def term_set(self) -> set[str]:
        return set(self.terms)

    @cached_property
    def about(self) -> set[str]:
        """The people and things it is about besides its names (sister, husband, car)."""
        return self.term_set & lexicon.RELATION_WORDS

    @cached_property
    def names(self) -> set[str]:
        return lexicon.names(self.content)

    @cached_property
    def numbers(self) -> set[str]:
        return lexicon.numbers(self.content)

    @cached_property
    def days(self) -> set[int]:
        return lexicon.days(self.content)

    @cached_property
    def months(self) -> set[int]:
        return lexicon.months(self.content)

    @cached_property
    def places(self) -> set[str]:
        return lexicon.places(self.content)

    @cached_property
    def relational(self) -> set[str]:
        return set(text.tokens(self.content)) & _RELATIONAL

    @cached_property
    def negative(self) -> bool:
        return lexicon.negated(self.content) or lexicon.ceased(self.content)

    @cached_property
    def ceased(self) -> bool:
        return lexicon.ceased(self.content)

    @cached_property
    def addition(self) -> bool:
        return lexicon.addition(self.content)


def _differ(a: set, b: set) -> bool:
    """Both say something and neither contains the other's."""
    return bool(a and b and a - b and b - a)


def _variants(a: str, b: str) -> bool:
    """Two terms that are one word written two ways ("math" / "mathemat", "tutoi" / "tutoy")."""
    short, long_ = sorted((a, b), key=len)
    if len(short) < 4 or short.isdigit() or ":" in short:
        return False
    common = len(_common_prefix(short, long_))
    return common >= 4 and common >= 0.75 * len(short)


def _common_prefix(a: str, b: str) -> str:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def distinction(a: Statement, b: Statement) -> str | None:
    """Why two statements are two facts whatever their wording, or None."""
    if a.about != b.about:
        return "about someone or something else"
    if a.negative != b.negative:
        return "one is negative"
    for what, x, y in (
        ("a number", a.numbers, b.numbers),
        ("a day", a.days, b.days),
        ("a month", a.months, b.months),
        ("a place", a.places, b.places),
        ("a name", a.names, b.names),
    ):
        if _differ(x, y):
            return f"{what} differs"
    if a.relational != b.relational:
        return "a relation word differs"
    return None


def restates(new: str, old: str, cosine: float) -> bool:
    """Whether `new` restates `old` (the same fact, perhaps with more detail)."""
    a, b = Statement(new), Statement(old)
    if distinction(a, b) is not None:
        return False
    only_a = a.term_set - b.term_set
    only_b = b.term_set - a.term_set
    if only_a and only_b:
        # A substitution: one fact only when every word swapped is a variant of another.
        unmatched_a = [x for x in only_a if not any(_variants(x, y) for y in only_b)]
        unmatched_b = [y for y in only_b if not any(_variants(y, x) for x in only_a)]
        if unmatched_a and unmatched_b:
            return False
    if not (a.term_set & b.term_set) and (a.term_set or b.term_set):
        return False
    return cosine >= RESTATEMENT_COSINE


def normalised(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip()
