"""Comparing two short statements: is one a restatement of the other (dedup), do they
contradict each other (check_consistency)? Rules on terms (lexicon.py), no LLM.

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

Contradiction (`conflict`): about the same subject, one of
- polarity: one is negative and the other is not, the rest being the same;
- ended habit: one says it stopped ("stopped smoking", "j'ai arrêté de fumer") and the
  other does it ("still smokes every day", "fume encore");
- excluded by a diet: "vegetarian" against "eats meat every day";
- opposites: love/hate, married/single, open/closed, always/never...;
- a changed value: same frame, different day, month, number or place ("swimming on
  Mondays" / "on Thursdays"), or a different value of a one-valued relation (lives in,
  works as, is called, favourite). A statement marked as an addition ("too", "also",
  "again", "aussi") changes nothing: "allergic to cats too" adds to "allergic to dogs".
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
# Relations with one value at a time: a different value is a change, not an addition.
_ONE_VALUED = frozenset(
    lexicon.term(w, lang)
    for w in lexicon.words(
        "live lives living born name favourite favorite job work works married age old "
        "habite vit vis nom prefere travaille marie"
    )
    for lang in ("en", "fr")
)
# What a diet or abstinence excludes (terms).
_CATEGORIES = {
    "meat": {"meat", "steak", "beef", "pork", "chicken", "ham", "bacon", "lamb", "boeuf", "porc"},
    "alcohol": {"alcohol", "wine", "beer", "whisky", "vodka", "cocktail", "gin", "rum"},
    "animal": {"meat", "fish", "cheese", "egg", "milk", "butter", "honey", "beurr", "miel"},
}
_DIETS = {"vegetarian": {"meat"}, "vegan": {"meat", "animal"}}


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

    @cached_property
    def values(self) -> set[str]:
        """Terms that are values: numbers, days, months, places."""
        out = set(self.numbers) | self.places
        out |= {f"day:{d}" for d in self.days} | {f"month:{m}" for m in self.months}
        places = {lexicon.term(p, self.lang) for p in self.places}
        return out | places

    @cached_property
    def frame(self) -> set[str]:
        """Its terms less its values: what it says about what."""
        return self.term_set - self.values


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


def conflict(statement: str, memory: str) -> str | None:
    """Why `statement` contradicts `memory`, or None (see the module docstring)."""
    a, b = Statement(statement), Statement(memory)
    if a.about != b.about or _differ(a.names - a.places, b.names - b.places):
        return None
    shared = a.term_set & b.term_set
    if shared:
        found = _ended(a, b) or _ended(b, a)
        if found:
            return found
        polarity = a.negative != b.negative and not (a.ceased and b.ceased)
        if polarity and _same_frame(a, b, loose=True):
            negated = statement if a.negative else memory
            return f"polarity: {negated!r} says the opposite"
    found = _diet(a, b) or _diet(b, a)
    if found:
        return found
    if not shared or a.negative != b.negative:
        return None
    for word in a.term_set | set(text.tokens(statement)):
        opposite = lexicon.OPPOSITES.get(word, set()) & (b.term_set | set(text.tokens(memory)))
        if opposite:
            return f"antonyms: {word!r} vs {sorted(opposite)[0]!r}"
    if a.addition or b.addition:
        return None
    if not _same_frame(a, b):
        return None
    for what, x, y in (
        ("day", a.days, b.days),
        ("month", a.months, b.months),
        ("number", a.numbers, b.numbers),
        ("place", a.places, b.places),
    ):
        if x and y and not x & y:
            return f"{what}s differ: {_shown(x)} vs {_shown(y)}"
    only_a, only_b = a.frame - b.frame, b.frame - a.frame
    if (
        len(only_a) == 1
        and len(only_b) == 1
        and shared & _ONE_VALUED
        and not _variants(next(iter(only_a)), next(iter(only_b)))
    ):
        return f"different value: {next(iter(only_a))!r} vs {next(iter(only_b))!r}"
    return None


def _same_frame(a: Statement, b: Statement, loose: bool = False) -> bool:
    """The same thing said of the same subject, values aside: equal frames, or one frame
    inside the other (loose: most of the smaller one shared)."""
    fa, fb = a.frame, b.frame
    if fa == fb or fa <= fb or fb <= fa:
        return True
    if loose:
        small = min(len(fa), len(fb))
        return small > 0 and len(fa & fb) / small >= 0.6
    return False


def _ended(a: Statement, b: Statement) -> str | None:
    """`a` says a habit ended and `b` (positive) says it goes on."""
    if not a.ceased or b.negative:
        return None
    activity = (a.frame & b.frame) - lexicon.RELATION_WORDS
    if activity:
        return f"ended habit: {a.content!r} but {b.content!r}"
    return None


def _diet(a: Statement, b: Statement) -> str | None:
    """`a` states a diet or an abstinence that `b` (positive) breaks."""
    if b.negative:
        return None
    excluded: set[str] = set()
    if not a.negative:
        for diet, categories in _DIETS.items():
            if diet in a.term_set:
                excluded |= {t for c in categories for t in _CATEGORIES[c]}
    else:
        for category, items in _CATEGORIES.items():
            if a.term_set & (items | {category}):
                excluded |= items | {category}
    broken = excluded & b.term_set
    if broken:
        return f"excluded: {a.content!r} excludes {sorted(broken)[0]!r}"
    return None


def _shown(values: set) -> str:
    return ", ".join(sorted(str(v) for v in values))


def normalised(value: str) -> str:
    return re.sub(r"\s+", " ", value).strip()
