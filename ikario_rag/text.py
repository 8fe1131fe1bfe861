"""Text helpers shared by the store, the search and the checks: private spans, tokens, dates."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from datetime import UTC, datetime, timedelta
from functools import lru_cache

from ikario_rag import contract, private

_TOKEN = re.compile(r"[0-9a-z]+(?:'[a-z]+)?")

# Words that carry no topic in either language the users write in (English, French).
STOPWORDS = frozenset(
    """
    a an the and or but if of at by for with about against between into through during before
    after above below to from up down in out on off over under again further then once here there
    all any both each few more most other some such no nor not only own same so than too very can
    will just don should now is are was were be been being have has had having do does did doing
    i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she
    her hers herself it its itself they them their theirs themselves what which who whom this that
    these those am would could shall might must may also ever let lets get got really much many
    when where why how one yes yeah oh ok okay well like just im ive youre thats
    le la les un une des du de d l au aux et ou mais donc or ni car ce cet cette ces mon ma mes ton
    ta tes son sa ses notre nos votre vos leur leurs je tu il elle on nous vous ils elles me te se
    moi toi lui eux en y que qui quoi dont est sont suis es sommes etes etait ete avoir avait a ai
    as ont pour par avec sans sous sur dans chez vers pas ne plus tres bien aussi qu s n c j m t
    quand comment pourquoi quel quelle quels quelles
    """.split()  # noqa: SIM905
)

# Words that flip a statement; used by the consistency check.
NEGATIONS = frozenset(
    ["not", "no", "never", "nor", "none", "nobody", "nothing", "cannot", "pas", "jamais", "rien"]
    + ["aucun", "aucune", "nothing"]
)


def negated(sentence: str) -> bool:
    """Whether a sentence is negative ("n't" is split off by the tokenizer, so test it apart)."""
    folded = fold(sentence)
    return "n't" in folded or any(t in NEGATIONS for t in tokens(sentence))


def strip_private(text: str) -> str:
    """Remove every <private>...</private> span, however written (see private.py)."""
    return private.strip(text)


# C0/C1 control characters other than white space (NUL...): never stored, never matched.
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")


def has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


# Bidirectional controls (U+202E turns "txt.exe" around on a page): never stored.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Brackets that look like "<" and ">" (fullwidth, small, angle, mathematical, Canadian
# syllabics): stored as the plain ones, which every page escapes, so none can pass for
# markup or a <private> marker that is not one.
_LOOKALIKE = str.maketrans(
    {c: "<" for c in "\uff1c\ufe64\u2329\u3008\u27e8\u276e\u1438\u02c2\u227a"}
    | {c: ">" for c in "\uff1e\ufe65\u232a\u3009\u27e9\u276f\u1433\u02c3\u227b"}
)


def clean(text: str, *, fold: bool = True) -> str:
    """What may be stored or searched of a caller's text: private spans, control and
    bidirectional characters removed, look-alike brackets made plain, white space folded
    to single spaces (or only trimmed)."""
    kept = strip_private(_BIDI.sub("", _CONTROL.sub("", text)).translate(_LOOKALIKE))
    return " ".join(kept.split()) if fold else kept.strip()


# Ligatures NFKD leaves whole: "sœur" is the lexicon's "soeur".
_LIGATURES = str.maketrans({"œ": "oe", "æ": "ae", "\u2019": "'", "\u2018": "'"})


def fold(text: str) -> str:
    """Lower-case, accents dropped, ligatures spelt out, curly apostrophes straight: "Épaule"
    and "epaule" compare equal, "sœur" is "soeur". The one folding of the project (memory
    and chat import it)."""
    if text.isascii():  # nothing to decompose (most text): 10x faster, same result
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.lower().translate(_LIGATURES))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def fold_in_place(text: str) -> str:
    """`fold`, one character for each of `text`'s (a ligature is kept whole), so that a
    match in the folded text is a span of `text`."""
    if text.isascii():
        return text.lower()
    return "".join(map(_fold_char, text))


@lru_cache(maxsize=4096)
def _fold_char(char: str) -> str:
    if char in "\u2019\u2018":
        return "'"
    low = char.lower()
    if len(low) != 1:
        return char
    base = unicodedata.normalize("NFKD", low)[:1] or low
    return low if unicodedata.combining(base) else base


def tokens(text: str) -> list[str]:
    """All word tokens, folded, apostrophe suffixes split ("l'epaule" -> "l", "epaule")."""
    out: list[str] = []
    for tok in _TOKEN.findall(fold(text)):
        out.extend(part for part in tok.split("'") if part)
    return out


def content_words(text: str) -> list[str]:
    """Tokens that say what a text is about (no stopwords, no one-letter words)."""
    return [t for t in tokens(text) if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]


def content_hash(content: str) -> str:
    """Identity of a memory's text: whitespace and case do not make a new memory."""
    normal = " ".join(fold(content).split())
    return hashlib.sha256(normal.encode("utf-8")).hexdigest()


def now() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def parse_date(value: str) -> datetime:
    """ISO-8601 date or date-time; a naive value is taken as UTC. Raises ValueError."""
    text = value.strip()
    if not text:
        raise ValueError("empty date")
    moment = datetime.fromisoformat(text.replace("z", "Z"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_ttl(value: str) -> timedelta:
    """A readable duration such as "30m", "1h", "7d", "2w" (contract.ttl_seconds). Raises
    ValueError."""
    return timedelta(seconds=contract.ttl_seconds(value))


_MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan", "janvier"),
            ("february", "feb", "fevrier"),
            ("march", "mar", "mars"),
            ("april", "apr", "avril"),
            ("may", "mai"),
            ("june", "jun", "juin"),
            ("july", "jul", "juillet"),
            ("august", "aug", "aout"),
            ("september", "sep", "sept", "septembre"),
            ("october", "oct", "octobre"),
            ("november", "nov", "novembre"),
            ("december", "dec", "decembre"),
        ],
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th|er)?\s+({_MONTH})\.?,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH})\.?,?\s+(\d{{4}})\b")
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")


def named_dates(query: str) -> list[tuple[datetime, datetime]]:
    """The calendar days or months a query names, as [start, end) UTC ranges.

    "on 13 October, 2023", "October 13, 2023", "2023-10-13" -> that day; "in December 2023"
    -> that month. A bare month or year says too little to be used.
    """
    folded = fold(query)
    ranges: list[tuple[datetime, datetime]] = []
    taken: list[tuple[int, int]] = []

    def add(match, year: int, month: int, day: int | None) -> None:
        if any(s < match.end() and match.start() < e for s, e in taken):
            return
        taken.append((match.start(), match.end()))
        try:
            start = datetime(year, month, day or 1, tzinfo=UTC)
        except ValueError:  # "31 February": no day, and not its month either
            return
        if day:
            end = start + timedelta(days=1)
        else:
            end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
        ranges.append((start, end))

    for m in _ISO_DAY.finditer(folded):
        add(m, int(m.group(1)), int(m.group(2)), int(m.group(3)))
    for m in _DAY_MONTH_YEAR.finditer(folded):
        add(m, int(m.group(3)), _MONTHS[m.group(2)], int(m.group(1)))
    for m in _MONTH_DAY_YEAR.finditer(folded):
        add(m, int(m.group(3)), _MONTHS[m.group(1)], int(m.group(2)))
    for m in _MONTH_YEAR.finditer(folded):
        add(m, int(m.group(2)), _MONTHS[m.group(1)], None)
    return ranges


# "Name: what they said" (one or two capitalised words, of up to 40 characters each, before
# a colon): a turn's speaker.
_SPEAKER = re.compile(r"^\s*([^\W\d_][\w'.-]{0,39}(?: [^\W\d_][\w'.-]{0,39})?)\s*:\s")


def speaker_of(content: str) -> str | None:
    """The folded speaker of a turn written "Name: ...", else None."""
    found = _SPEAKER.match(content)
    if found is None or not found.group(1)[0].isupper():
        return None
    return fold(found.group(1))
