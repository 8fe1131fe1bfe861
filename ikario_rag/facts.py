"""Comparing two short statements about the user: the same fact, one restating the other,
a negation, a changed number, date or name, or two facts (`compare`). Rules on terms
(lexicon.py), no LLM. The one rule of "the same fact": the memory server's dedup
(`restates`), the web app's echo filter and memory health all call `compare`.

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

Without a vector at hand (the web app), the share of terms the two hold in common stands in
for the cosine (RESTATEMENT_SHARE).

Whether two statements contradict each other is ikario_rag/consistency.py's (it reads
statements with this module's Statement).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache, cached_property

from ikario_rag import lexicon, text

# Cosine at or above which two statements with the same terms (or one adding to the other)
# are one fact: the lowest restatement of the dev set is 0.74, a refinement adding a date.
RESTATEMENT_COSINE = 0.72
# Share of their terms (Jaccard) two statements with no cosine hold in common to be one
# fact: "Alice is allergic to peanuts" / "The user is allergic to peanuts" hold 2 of 4
# ("alice" is a term twice: stem and name).
RESTATEMENT_SHARE = 0.5
# Who every stored fact is about: it says nothing of what the fact says.
_THE_USER = lexicon.words("user users utilisateur utilisatrice")
# Words that say a statement's polarity, which `negative` reads: not what it is about.
_POLARITY = lexicon.words(
    "no not never longer anymore stopped stop stops quit quits gave give given up "
    "ne pas plus jamais arrete arretee arreter cesse renonce"
)
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
        return lexicon.terms(self.content, self.lang, stops=_fact_stops())

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

    @cached_property
    def details(self) -> set[str]:
        """Its terms that are a number, a day, a month, a name or a place."""
        out = {t for t in self.term_set if t.isdigit() or t.startswith(("day:", "month:"))}
        named = self.names | self.places
        for word, _ in lexicon.cased_words(self.content):
            folded = text.fold(word)
            if folded in named:
                out |= {folded, lexicon.term(word, self.lang)}
        return out | self.places

    @cached_property
    def core(self) -> set[str]:
        """What it says, its details and its polarity aside: "has 2 children" and "has 3
        children", "eats meat" and "no longer eats meat" say one thing of the user."""
        return self.term_set - self.details - _polarity_terms(self.lang)


class Relation(StrEnum):
    """What a new statement is to an old one."""

    SAME = "same"  # one fact, the new saying nothing the old does not
    RESTATES = "restates"  # one fact, the new saying more
    NEGATES = "negates"  # the same thing, one of the two negative or ended ("no longer")
    CHANGES_NUMBER = "changes a number"
    CHANGES_DATE = "changes a date"
    CHANGES_NAME = "changes a name"  # or a place
    OTHER = "other"  # two facts

    @property
    def same_fact(self) -> bool:
        return self in (Relation.SAME, Relation.RESTATES)

    @property
    def corrects(self) -> bool:
        """The new statement corrects the old: never an echo, never a duplicate."""
        return not self.same_fact and self is not Relation.OTHER


@cache
def _fact_stops() -> frozenset[str]:
    return lexicon.fact_stops() | _THE_USER


@cache
def _polarity_terms(lang: str) -> frozenset[str]:
    return frozenset(lexicon.term(w, lang) for w in _POLARITY)


def _differ(a: set, b: set) -> bool:
    """Both say something and neither contains the other's."""
    return bool(a and b and a - b and b - a)


def _variants(a: str, b: str) -> bool:
    """Two terms that are one word written two ways ("math" / "mathemat", "tutoi" / "tutoy")."""
    if a[:4] != b[:4]:  # most pairs (health compares every pair of 500 facts)
        return False
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


def _related(a: set[str], b: set[str]) -> bool:
    """Terms of one fact: some in common, and where each side has terms of its own (a
    substitution: "red" / "blue"), every one of a side's a variant of the other's."""
    if not a and not b:
        return True
    if not a & b:
        return False
    only_a, only_b = a - b, b - a
    return not (_says_more(only_a, only_b) and _says_more(only_b, only_a))


def _says_more(a: set[str], b: set[str]) -> bool:
    """`a` holds a term that is not `b`'s, nor a variant of one of `b`'s."""
    return any(x not in b and not any(_variants(x, y) for y in b) for x in a)


def _statement(value: Statement | str) -> Statement:
    return value if isinstance(value, Statement) else Statement(value)


def compare(new: Statement | str, old: Statement | str, cosine: float | None = None) -> Relation:
    """What `new` is to `old`. One fact (SAME, RESTATES) only when nothing tells them
    apart (who or what they are about, a relation word, polarity, a number, a date, a name,
    a place) and their terms are close: `cosine` (their vectors') at least
    RESTATEMENT_COSINE, or without one, a share of terms of RESTATEMENT_SHARE."""
    a, b = _statement(new), _statement(old)
    if a.core and b.core and not _related(a.core, b.core):
        return Relation.OTHER
    if a.about != b.about or a.relational != b.relational:
        return Relation.OTHER
    if a.negative != b.negative:
        return Relation.NEGATES
    for relation, x, y in (
        (Relation.CHANGES_NUMBER, a.numbers, b.numbers),
        (Relation.CHANGES_DATE, a.days, b.days),
        (Relation.CHANGES_DATE, a.months, b.months),
        (Relation.CHANGES_NAME, a.places, b.places),
        (Relation.CHANGES_NAME, a.names, b.names),
    ):
        if _differ(x, y):
            return relation
    if not _related(a.term_set, b.term_set):
        return Relation.OTHER
    if cosine is not None:
        close = cosine >= RESTATEMENT_COSINE
    else:
        union = a.term_set | b.term_set
        close = not union or len(a.term_set & b.term_set) / len(union) >= RESTATEMENT_SHARE
    if not close:
        return Relation.OTHER
    return Relation.RESTATES if _says_more(a.term_set, b.term_set) else Relation.SAME


def restates(new: str, old: str, cosine: float) -> bool:
    """Whether `new` restates `old` (the same fact, perhaps with more detail): dedup's rule."""
    return compare(new, old, cosine).same_fact


def normalised(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip()
