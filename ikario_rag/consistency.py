"""Does a statement fit a stored memory? Rules on terms (lexicon.py, facts.py), no LLM, and
honest about what they do not know.

`judge(statement, memory, cosine)` answers one of:

- `contradiction`: a rule names why both cannot be true (see `_contradiction`);
- `support`: the memory says the same thing, or part of it;
- `compatible`: both can be true and a rule says why (an addition such as "also" or
  "aussi", a second value of a relation that has several: likes, speaks, plays, visited);
- `undetermined`: both are about the same subject and topic, and no rule applies: the
  rules cannot tell ("never drinks coffee" / "drinks green tea"); a model may judge it;
- `unrelated`: someone or something else, or another topic.

Who a statement is about (`subject`) comes first: "Marc is a lawyer" says nothing of
Sophie, "Karim's father" is not Karim, "my sister Claire" is Claire.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache

from ikario_rag import contract, facts, lexicon, text

CONTRADICTION, SUPPORT, COMPATIBLE, UNDETERMINED, UNRELATED = (
    "contradiction",
    "support",
    "compatible",
    "undetermined",
    "unrelated",
)


# A memory about the same subject that shares no word with the statement is another topic
# unless their vectors are this close (then the rules cannot tell: "lactose intolerant" /
# "a glass of milk").
UNRELATED_BELOW = 0.6
# MiniLM is English-first: any two French sentences score 0.4-0.6.
UNRELATED_BELOW_FR = 0.7


@dataclass(frozen=True)
class Judgement:
    verdict: str
    reason: str = ""


def _terms_of(block: str) -> frozenset[str]:
    return frozenset(
        lexicon.term(w, lang) for w in lexicon.raw_words(block) for lang in ("en", "fr")
    )


# Words that set a statement's polarity, time or scope rather than what it is about.
_MARKERS = """not no never nor none nobody nothing cannot pas jamais rien aucun aucune ni ne
    stopped stop quit gave up give longer anymore arrete arretee cesse abandonne renonce plus
    still every daily each encore toujours tous chaque quotidien always ever really often usually
    too also either additionally aussi egalement again souvent day days jour jours morning matin
    soir evening week semaine only seul seule"""

# Jobs (English and French, both genders): one at a time unless a statement says otherwise.
_JOBS = """accountant actor actress architect artist baker banker barber builder butcher
    carpenter cashier chef cleaner clerk coach consultant cook dentist designer developer
    programmer doctor driver economist editor electrician engineer farmer firefighter
    gardener hairdresser journalist judge lawyer solicitor librarian manager mechanic
    midwife musician nurse painter pharmacist photographer physician physiotherapist pilot
    plumber police policeman policewoman professor psychologist researcher receptionist
    salesman scientist secretary singer student surgeon tailor teacher translator vet
    veterinarian waiter waitress writer
    comptable acteur actrice architecte artiste boulanger boulangere banquier banquiere
    coiffeur coiffeuse boucher bouchere menuisier caissier caissiere cuisinier cuisiniere
    consultante dentiste developpeur developpeuse medecin chauffeur economiste editrice
    electricien electricienne ingenieur ingenieure agriculteur agricultrice pompier
    jardinier jardiniere journaliste juge avocat avocate bibliothecaire mecanicien
    sage-femme musicien musicienne peintre pharmacien pharmacienne photographe
    kinesitherapeute kine pilote plombier policier policiere professeur professeure prof
    psychologue chercheur chercheuse secretaire chanteur chanteuse chirurgien chirurgienne
    couturier couturiere traducteur traductrice veterinaire serveur serveuse ecrivain
    ecrivaine infirmier infirmiere enseignant enseignante etudiant etudiante instituteur
    institutrice"""
# What introduces a job: "is a", "works as", "je suis", "travaille comme".
_JOB_LEADS = lexicon.words("is am m are works work job as est suis es travaille comme tant que")
# Verbs that say little of a habit without their object ("stopped eating sugar").
_GENERIC = """eat eating drink drinking have having take taking do doing go going make making
    use using manger boire prendre faire aller utiliser"""
# Colours: a thing has one ("my car is red" / "my car is blue").
_COLOURS = """red blue green yellow black white grey gray pink purple orange brown silver
    rouge bleu bleue vert verte jaune noir noire blanc blanche gris grise rose violet
    violette marron argent"""
_COPULA = lexicon.words("is are est sont")
# A time other than now: what was true then may not be now.
_PAST = re.compile(
    r"\b(used to|(was|were)(?! born)|former(ly)?|ex|retired|previously|ancien(ne)?|"
    r"autrefois|etait|etais|retraite)\b"
)

# Ordinals are numbers ("the fourth floor" / "the ninth floor").
_ORDINALS = {
    w: str(n)
    for n, group in enumerate(
        [
            "first premier premiere",
            "second deuxieme seconde",
            "third troisieme",
            "fourth quatrieme",
            "fifth cinquieme",
            "sixth sixieme",
            "seventh septieme",
            "eighth huitieme",
            "ninth neuvieme",
            "tenth dixieme",
        ],
        start=1,
    )
    for w in group.split()
}
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")
# "One" is an article more often than a number, except here.
_ONE = re.compile(r"\b(une? seule?|only one|a single|just one)\b")

# The user's own name ("je m'appelle Julie"); a relative's is "ma fille s'appelle Jeanne".
_MY_NAME = re.compile(r"\b(my name is|i am called|i'?m called|je m'?\s?appelle|mon nom est)\b")

# Relations with one value at a time: a different value is a change ("lives in", "is called").
_ONE_VALUED = """live lives living lived born from moved based grew name named called
    favourite favorite married age old habite vit vis vivent ne nee originaire installe
    installee appelle nom prefere preferee"""
# Relations with several values: a new value adds to the others ("also likes rock").
_MANY_VALUED = """like likes love loves enjoy enjoys speak speaks play plays visit visited
    went been travel travelled spent collect collects allergic allergy own owns aime aimes
    adore adores parle parles joue joues visite voyage passe collectionne allergique"""
# Saying it is the only one: "only speaks French" leaves no room for a second value.
_ONLY = re.compile(r"\b(only|just|seulement|uniquement|exclusively|exclusivement)\b")
_ONLY_FR = re.compile(r"\bn(e)?\s+\w+\s+(que|qu)\b")  # "ne boit que du thé"

# Food families: what a diet, an abstinence or an allergy excludes (either language).
_FOODS = {
    "meat": """meat steak beef pork chicken ham bacon lamb veal sausage sausages burger
        mince duck turkey viande boeuf porc poulet jambon lardons agneau veau saucisse
        saucisson canard dinde""",
    "fish": """fish salmon tuna cod sardine sardines anchovy anchovies poisson saumon thon
        cabillaud""",
    "shellfish": """shellfish prawn prawns shrimp shrimps crab lobster mussels oysters
        scallops crevette crevettes crabe homard moules huitres coquillages crustaces""",
    "dairy": """dairy lactose milk cheese butter cream yogurt yoghurt lait fromage beurre
        creme yaourt laitiers""",
    "egg": "egg eggs omelette oeuf oeufs",
    "nut": """nut nuts walnut walnuts almond almonds hazelnut hazelnuts cashew cashews
        pistachio noix noisette noisettes amande amandes cajou pistache""",
    "peanut": "peanut peanuts arachide arachides cacahuete cacahuetes",
    "gluten": """gluten wheat bread pasta pizza flour baguette ble pain pates farine""",
    "alcohol": """alcohol wine beer whisky whiskey vodka gin rum cocktail cocktails champagne
        cider alcool vin biere bieres rhum cidre""",
    "honey": "honey miel",
}
# A diet and the families it excludes.
_DIETS = {
    "vegetarian": ("meat", "fish", "shellfish"),
    "vegan": ("meat", "fish", "shellfish", "dairy", "egg", "honey"),
    "teetotal": ("alcohol",),
    "pescatarian": ("meat",),
    "coeliac": ("gluten",),
    "celiac": ("gluten",),
    "gluten-free": ("gluten",),
}
# The head word of each family: "doesn't eat meat" excludes all meat, "doesn't eat pork"
# only pork.
_FAMILY_HEADS = {
    "meat": "meat viande",
    "fish": "fish poisson",
    "shellfish": "shellfish seafood crustaces coquillages",
    "dairy": "dairy laitiers lactose",
    "egg": "egg eggs oeuf oeufs",
    "nut": "nut nuts noix",
    "peanut": "peanut peanuts arachide arachides cacahuete cacahuetes",
    "gluten": "gluten wheat ble",
    "alcohol": "alcohol alcool",
    "honey": "honey miel",
}
# Plant milks and butters are not dairy ("oat milk", "lait d'avoine", "peanut butter" is
# peanuts, not butter).
_PLANT = re.compile(
    r"\b(oat|soy|soya|almond|rice|coconut|peanut|nut)\s+(milk|butter|cream)\b|"
    r"\b(lait|beurre|creme)\s+(d|de)\s*(avoine|soja|amande|riz|coco|cacahuete|arachide)\b"
)


def _plant_only(match: re.Match) -> str:
    """ "peanut butter" -> "peanut", "lait d'avoine" -> "avoine": the plant, not dairy."""
    return match.group(1) or match.group(5)


# Common verbs of both languages as one term (lexicon.CANON has the nouns).
_VERBS = {
    "drink": "drink drinks drank drinking boire bois boit buvons buvez boivent",
    "eat": "eat eats ate eating manger mange manges mangeons mangez mangent",
    "speak": "speak speaks spoke speaking parler parle parles parlons parlez parlent",
    "play": "play plays played playing jouer joue joues jouons jouez jouent",
    "coffee": "cafes coffees",
}

# Eating, drinking or liking something (a diet or an allergy is broken by these).
_TAKES = """eat eats ate eating drink drinks drank drinking have has had having love loves
    like likes enjoy enjoys order orders favourite favorite snack cook cooks
    mange manges mangeons mangent manger bois boit boivent boire prend prends prendre adore
    adores aime aimes commande goute"""
# Without it: "pancakes made without eggs", "sans gluten", "egg-free".
_WITHOUT = re.compile(r"\b(without|sans|no|free of)\s+(?:\w+\s+)?(\w+)|\b(\w+)-free\b")


@cache
def _vocab() -> dict:
    foods = {family: _terms_of(block) for family, block in _FOODS.items()}
    heads = {family: _terms_of(block) for family, block in _FAMILY_HEADS.items()}
    verbs = {t: verb for verb, block in _VERBS.items() for t in _terms_of(block)}
    return {
        "generic": _terms_of(_GENERIC) | {"eat", "drink"},
        "colours": _terms_of(_COLOURS),
        "verbs": verbs,
        "heads": heads,
        "markers": _terms_of(_MARKERS),
        "jobs": _terms_of(_JOBS),
        "one": _terms_of(_ONE_VALUED),
        "many": _terms_of(_MANY_VALUED),
        "foods": foods,
        "family_of": {t: family for family, ts in foods.items() for t in ts},
        "takes": _terms_of(_TAKES),
        "not_food": lexicon._not_food_terms(),
    }


_HINTS = lexicon._FRENCH_HINTS | lexicon._ENGLISH_HINTS


def _language(value: str) -> str:
    """The language of a statement, its names aside ("Léa drinks tea" is English)."""
    kept = [w for w in value.split() if not w[:1].isupper() or text.fold(w).strip(".,!?") in _HINTS]
    return lexicon.language(" ".join(kept) or value)


# "thé" folds to the English stop word "the".
_TEA = re.compile(r"\bth[éÉ]s?\b", re.IGNORECASE)


class Said:
    """One statement as the rules read it."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.lang = _language(content)
        self.fact = facts.Statement(content)
        self.fact.lang = self.lang
        self.folded = text.fold(_TEA.sub("tea", self.fact.content))

    @cached_property
    def terms(self) -> frozenset[str]:
        verbs = _vocab()["verbs"]
        tea = {"tea"} if re.search(r"\bteas?\b", self.folded) else set()
        return frozenset(verbs.get(t, t) for t in self.fact.terms) | tea

    @cached_property
    def tokens(self) -> list[str]:
        return text.tokens(self.content)

    @cached_property
    def ceased(self) -> bool:
        """It says a habit ended ("stopped smoking", "j'ai arrêté le café")."""
        return self.fact.ceased or re.search(r"\barretee? (le|la|les|l)\b", self.folded) is not None

    @cached_property
    def negative(self) -> bool:
        return self.fact.negative or self.ceased

    @cached_property
    def core(self) -> frozenset[str]:
        """What it says of what: its terms less polarity, time and scope words."""
        return self.terms - _vocab()["markers"]

    @cached_property
    def subject(self) -> tuple[str, ...]:
        return _subject(self.content)

    @cached_property
    def jobs(self) -> frozenset[str]:
        """Jobs it gives its subject ("is a nurse", "travaille comme avocate")."""
        toks = [text.fold(w) for w in lexicon.raw_words(self.content)]
        out = set()
        for pos, word in enumerate(toks):
            found = lexicon.term(word, self.lang)
            if found not in _vocab()["jobs"] and word not in _vocab()["jobs"]:
                continue
            if any(t in _JOB_LEADS for t in toks[max(0, pos - 4) : pos]):
                out.add(found)
        return frozenset(out)

    @cached_property
    def numbers(self) -> frozenset[str]:
        """Numbers it states: digits (decimals whole: "1,80"), number words, ordinals."""
        found = {m.replace(",", ".").lstrip("0") or "0" for m in _NUMBER.findall(self.folded)}
        decimals = {n for n in found if "." in n}
        found |= set(lexicon.numbers(self.content)) - {
            part.lstrip("0") or "0" for n in decimals for part in n.split(".")
        }
        found |= {_ORDINALS[t] for t in self.tokens if t in _ORDINALS}
        if _ONE.search(self.folded):
            found.add("1")
        return frozenset(found)

    @cached_property
    def frame(self) -> frozenset[str]:
        """Its core less its values (numbers, days, months, places): what it says of what."""
        places = {lexicon.term(p, self.lang) for p in self.fact.places} | self.fact.places
        ordinals = _terms_of(" ".join(t for t in self.tokens if t in _ORDINALS))
        return frozenset(
            t
            for t in self.core - places - ordinals
            if not (t.isdigit() or t.startswith(("day:", "month:")))
        )

    @cached_property
    def colours(self) -> frozenset[str]:
        """Colours it gives its subject ("is red", "est bleue")."""
        toks = self.tokens
        return frozenset(
            lexicon.term(t, self.lang)
            for pos, t in enumerate(toks)
            if lexicon.term(t, self.lang) in _vocab()["colours"]
            and any(w in _COPULA for w in toks[max(0, pos - 2) : pos])
        )

    @cached_property
    def names(self) -> frozenset[str]:
        """Names it gives, besides who it is about ("my daughter is called Jeanne")."""
        return frozenset(self.fact.names - set(self.subject[1:]))

    @cached_property
    def past(self) -> bool:
        return _PAST.search(self.folded) is not None

    @cached_property
    def addition(self) -> bool:
        return self.fact.addition

    @cached_property
    def without(self) -> frozenset[str]:
        found = set()
        for match in _WITHOUT.finditer(self.folded):
            found |= {g for g in match.groups()[1:] if g}
        return _terms_of(" ".join(found))

    @cached_property
    def foods(self) -> dict[str, set[str]]:
        """Food families it names, each with the terms that named it."""
        out: dict[str, set[str]] = {}
        plain = _PLANT.sub(_plant_only, self.folded)
        for t in (_terms_of(plain) & self.terms) - self.without:
            family = _vocab()["family_of"].get(t)
            if family:
                out.setdefault(family, set()).add(t)
        return out

    @cached_property
    def takes(self) -> bool:
        """It eats, drinks or likes something."""
        return bool(_terms_of(" ".join(self.tokens)) & _vocab()["takes"])

    @cached_property
    def diet_excludes(self) -> set[str]:
        """Food families its diet or abstinence excludes ("vegan", "never drinks alcohol")."""
        out: set[str] = set()
        if not self.negative:
            for diet, families in _DIETS.items():
                if diet in self.terms or diet in self.folded:
                    out |= set(families)
            if "teetotal" in self.folded or re.search(r"\bsans alcool\b", self.folded):
                out.add("alcohol")
        elif self.takes:
            for family, named in self.foods.items():
                if named & _vocab()["heads"][family]:
                    out.add(family)
        return out

    @cached_property
    def allergic(self) -> bool:
        return not self.negative and bool({"allergy"} & self.terms or "intoleran" in self.folded)

    @cached_property
    def allergens(self) -> set[str]:
        """What it is allergic or intolerant to, when it is food (not pets, pollen, drugs):
        its food families, and its other words ("strawberries")."""
        if not self.allergic:
            return set()
        words = self.core - _subject_terms(self) - {"allergy"} - _terms_of("intolerant intolerante")
        if words & _vocab()["not_food"]:
            return set()
        return set(self.foods) | {f"word:{t}" for t in words}

    def eaten(self) -> set[str]:
        """Food families and words it eats, drinks or likes (not what it goes without)."""
        if self.negative or self.past or not self.takes:
            return set()
        plain = _terms_of(_PLANT.sub(_plant_only, self.folded))
        words = (self.core & plain) - self.without - _vocab()["takes"] - _subject_terms(self)
        return set(self.foods) | {f"word:{t}" for t in words}


@lru_cache(maxsize=1024)
def _read(content: str) -> Said:
    """A statement read once: one check compares it with 20 memories."""
    return Said(content)


# -- who a statement is about ---------------------------------------------------------------

_SELF = lexicon.words("i me my im ive je j moi mon ma mes we our nous notre nos on")
_OWNERS = lexicon.words("my our his her their your mon ma mes notre nos son sa ses leur leurs")
_LEAD = 5  # what a statement opens with is what it is about


def _subject(content: str) -> tuple[str, ...]:
    """Who or what `content` is about: ("self",), ("name", "claire"), ("rel", "sister"),
    ("of", "karim", "father"): Karim's father, ("of", "rel:neighbour", "car")..."""
    words = lexicon.cased_words(content)[: _LEAD + 2]
    folded = [(text.fold(w), cap) for w, cap in words]
    head = None
    for pos, (word, capital) in enumerate(folded[:_LEAD]):
        canon = lexicon.CANON.get(word, word)
        is_rel = canon in lexicon.RELATION_WORDS
        is_name = capital and not is_rel and _name_like(word)
        if is_name:
            nxt = folded[pos + 1][0] if pos + 1 < len(folded) else ""
            after = folded[pos + 2][0] if pos + 2 < len(folded) else ""
            owned = lexicon.CANON.get(after, after)
            if nxt == "s" and owned in lexicon.RELATION_WORDS:
                return ("of", word, owned)
            return ("name", word)
        if is_rel and (pos == 0 or folded[pos - 1][0] in _OWNERS | {"s", "de", "du"}):
            if head is None:
                head = canon
            # "le vélo de ma voisine": the thing of someone.
            if pos + 2 < len(folded) and folded[pos + 1][0] in ("de", "du"):
                owner = lexicon.CANON.get(folded[pos + 2][0], folded[pos + 2][0])
                if folded[pos + 2][0] in _OWNERS and pos + 3 < len(folded):
                    owner = lexicon.CANON.get(folded[pos + 3][0], folded[pos + 3][0])
                if owner in lexicon.RELATION_WORDS:
                    return ("of", f"rel:{owner}", canon)
                if folded[min(pos + 2, len(folded) - 1)][1]:
                    return ("of", folded[pos + 2][0], canon)
            # "my sister Claire": the name says who.
            nxt = folded[pos + 1] if pos + 1 < len(folded) else ("", False)
            if nxt[1] and _name_like(nxt[0]):
                return ("name", nxt[0])
            return ("rel", canon)
        if word in _SELF and head is None:
            nxt = folded[pos + 1][0] if pos + 1 < len(folded) else ""
            if word in _OWNERS and lexicon.CANON.get(nxt, nxt) in lexicon.RELATION_WORDS:
                continue  # "my sister": about her, said below
            return ("self",)
    return ("self",) if head is None else ("rel", head)


def _name_like(word: str) -> bool:
    return (
        len(word) > 1
        and word not in lexicon.stop_words()
        and word not in lexicon.CANON
        and word not in lexicon.DAYS
        and word not in lexicon.MONTHS
        and word not in lexicon.SCAFFOLD
        and word not in _HINTS
    )


def _same_subject(a: Said, b: Said) -> str:
    """ "same", "different" or "maybe": a name and a relation word ("Claire", "my sister"),
    or a name and the user (facts are often written with the user's name: "Alice lives in
    Lyon" may be what "I live in Paris" is about)."""
    sa, sb = a.subject, b.subject
    if sa == sb:
        return "same"
    kinds = {sa[0], sb[0]}
    if kinds == {"name", "self"}:
        return "maybe"
    if kinds == {"name", "rel"}:
        name = sa[1] if sa[0] == "name" else sb[1]
        other = b if sa[0] == "name" else a
        # "Filou, mon chat" and "mon chat s'appelle Filou".
        if name in {text.fold(w) for w in lexicon.raw_words(other.content)}:
            return "same"
        return "maybe"
    return "different"


# -- the rules ------------------------------------------------------------------------------


def judge(statement: str, memory: str, cosine: float = 0.0) -> Judgement:
    """How `statement` stands to `memory` (see the module docstring)."""
    a, b = _read(statement), _read(memory)
    subject = _same_subject(a, b)
    if subject == "different":
        return Judgement(UNRELATED, "about someone or something else")
    found = _contradiction(a, b)
    topic = (a.core & b.core) - _subject_terms(a) - _subject_terms(b)
    topic |= _excluded_mentioned(a, b) | _excluded_mentioned(b, a)
    if subject == "maybe":
        if found or topic:
            return Judgement(UNDETERMINED, "perhaps about someone else")
        return Judgement(UNRELATED, "about someone else")
    if found:
        return Judgement(CONTRADICTION, found)
    agreed = _agreement(a, b)
    if agreed:
        return Judgement(SUPPORT, agreed)
    compatible = _compatible(a, b)
    if compatible:
        return Judgement(COMPATIBLE, compatible)
    french = "fr" in (a.lang, b.lang)
    if not topic and cosine < (UNRELATED_BELOW_FR if french else UNRELATED_BELOW):
        return Judgement(UNRELATED, "another topic")
    if not topic:
        return Judgement(UNDETERMINED, "close in meaning, and no rule applies")
    return Judgement(UNDETERMINED, "the same topic, and no rule applies: " + _shown(topic))


def _excluded_mentioned(a: Said, b: Said) -> set[str]:
    """What `a`'s diet or allergy excludes that `b` names (eaten or not: "honey in my tea"
    is the same topic as "vegan", whatever the verb)."""
    if b.negative:
        return set()
    excluded = a.diet_excludes | a.allergens
    return {t for family, named in b.foods.items() if family in excluded for t in named} | {
        t for t in b.core if f"word:{t}" in a.allergens
    }


def _subject_terms(s: Said) -> set[str]:
    """The terms that name who or what it is about ("claire", "clair", "sister")."""
    parts = [p.removeprefix("rel:") for p in s.subject[1:]]
    return set(parts) | set(_terms_of(" ".join(parts)))


def _contradiction(a: Said, b: Said) -> str | None:
    return (
        _ended(a, b)
        or _ended(b, a)
        or _polarity(a, b)
        or _broken_diet(a, b)
        or _broken_diet(b, a)
        or _allergy(a, b)
        or _allergy(b, a)
        or _opposites(a, b)
        or _changed_value(a, b)
    )


_CEASE = re.compile(
    r"\b(stopped|quit|gave up|given up|no longer|arrete(e)? (de|le|la|les)|cesse de|"
    r"renonce a|ne|n)\s+((?:\w+\s+){0,2}\w+)"
)


def _ended(a: Said, b: Said) -> str | None:
    """`a` says a habit ended ("quit running", "j'ai arrêté le café", "ne fume plus"), `b`
    that it goes on now: what stopped is what follows the words that stop it."""
    if not a.ceased or b.negative or b.past:
        return None
    stopped: set[str] = set()
    for match in _CEASE.finditer(a.folded):
        stopped |= _terms_of(match.group(4))
    verbs = _vocab()["verbs"]
    stopped = {verbs.get(t, t) for t in stopped} - _vocab()["markers"]
    # "stopped eating sugar": what must go on is the sugar, not any eating.
    things = stopped - _vocab()["generic"]
    if (things or stopped) & b.core:
        return f"ended habit: {a.content!r} but {b.content!r}"
    return None


def _polarity(a: Said, b: Said) -> str | None:
    """One denies what the other says: the denied thing is all in the other statement."""
    if a.negative == b.negative or (a.ceased and b.ceased):
        return None
    neg, pos = (a, b) if a.negative else (b, a)
    if pos.past or neg.past:
        return None
    said = pos.core | ({"like"} if "love" in pos.core else set())  # loving is liking
    if neg.core and (neg.core <= said or (pos.core <= neg.core and len(pos.core) > 1)):
        return f"polarity: {neg.content!r} says the opposite"
    return None


def _broken_diet(a: Said, b: Said) -> str | None:
    """`a` keeps a diet or an abstinence that `b` breaks (eating or liking what it excludes)."""
    excluded = a.diet_excludes
    if not excluded or b.negative or b.past or not b.takes:
        return None
    broken = set(b.foods) & excluded
    if broken:
        named = sorted(t for f in broken for t in b.foods[f])[0]
        return f"excluded: {a.content!r} excludes {named!r}"
    return None


def _allergy(a: Said, b: Said) -> str | None:
    """`a` is allergic to a food that `b` eats or likes."""
    if not a.allergens or b.allergic:
        return None
    hit = b.eaten() & a.allergens
    if hit:
        named = sorted(h.removeprefix("word:") for h in hit)[0]
        return f"allergy: {a.content!r} but {named!r} in {b.content!r}"
    return None


def _opposites(a: Said, b: Said) -> str | None:
    """Opposite words (love/hate, married/single, open/closed) about the same thing."""
    if a.negative != b.negative:
        return None
    words_a = a.terms | set(a.tokens)
    words_b = b.terms | set(b.tokens)
    for word in sorted(words_a):
        opposite = _opposites_of(word) & words_b
        if not opposite:
            continue
        pair = _terms_of(f"{word} {' '.join(opposite)}") | {word, *opposite}
        rest_a, rest_b = a.core - pair, b.core - pair
        if rest_a == rest_b or _same_core(rest_a, rest_b):
            return f"antonyms: {word!r} vs {sorted(opposite)[0]!r}"
    return None


@cache
def _opposite_terms() -> dict[str, frozenset[str]]:
    """lexicon.OPPOSITES with the terms of each word as well ("mariés", "divorcés")."""
    out: dict[str, set[str]] = {}
    for word, others in lexicon.OPPOSITES.items():
        for key in {word} | _terms_of(word) | _terms_of(word + "s"):
            if lexicon.CANON.get(key, key) == key:  # "mari" is "husband", not "married"
                out.setdefault(key, set()).update(others, *(_terms_of(o) for o in others))
    return {key: frozenset(value) for key, value in out.items()}


def _opposites_of(word: str) -> frozenset[str]:
    return _opposite_terms().get(word, frozenset())


def _changed_value(a: Said, b: Said) -> str | None:
    """The same relation with another value: a job, a place one lives in, a number, a day."""
    if a.negative or b.negative or a.addition or b.addition or a.past or b.past:
        return None
    if a.jobs and b.jobs and not _overlap(a.jobs, b.jobs):
        return f"different job: {_shown(a.jobs)} vs {_shown(b.jobs)}"
    if a.colours and b.colours and not a.colours & b.colours and a.subject[0] != "self":
        return f"different colour: {_shown(a.colours)} vs {_shown(b.colours)}"
    fa, fb = a.fact, b.fact
    one = (a.core & b.core) & _vocab()["one"]
    same_scope = (a.numbers, fa.days, fa.months) == (b.numbers, fb.days, fb.months)
    same_frame = a.frame == b.frame and same_scope
    moved = one or (same_frame and not (a.core & b.core) & _vocab()["many"])
    if fa.places and fb.places and not fa.places & fb.places and moved:
        return f"places differ: {_shown(fa.places)} vs {_shown(fb.places)}"
    own_name = all(s.subject[0] == "rel" or _MY_NAME.search(s.folded) for s in (a, b))
    if one and own_name and a.names and b.names and not a.names & b.names:
        rest_a = a.core - _terms_of(" ".join(a.names)) - a.names
        rest_b = b.core - _terms_of(" ".join(b.names)) - b.names
        if rest_a == rest_b:
            return f"different name: {_shown(a.names)} vs {_shown(b.names)}"
    if not _same_core(a.frame, b.frame, strict=True):
        return None
    for what, x, y in (
        ("day", fa.days, fb.days),
        ("month", fa.months, fb.months),
        ("number", a.numbers, b.numbers),
    ):
        if x and y and not x & y:
            return f"{what}s differ: {_shown(x)} vs {_shown(y)}"
    only_a, only_b = a.core - b.core, b.core - a.core
    if one and len(only_a) == 1 and len(only_b) == 1 and not _overlap(only_a, only_b):
        return f"different value: {_shown(only_a)} vs {_shown(only_b)}"
    return None


def _agreement(a: Said, b: Said) -> str | None:
    """The memory says the same, or part of it, with the same polarity and values."""
    excluded = a.diet_excludes & b.diet_excludes
    if excluded and a.past == b.past:
        return "agrees: both exclude " + _shown(excluded)
    if a.negative != b.negative or a.past != b.past:
        return None
    if a.jobs and b.jobs and _overlap(a.jobs, b.jobs):
        return "agrees on " + _shown(a.jobs & b.jobs or a.jobs)
    shared = a.core & b.core
    if not shared or not _same_core(a.core, b.core):
        return None
    fa, fb = a.fact, b.fact
    for x, y in ((a.numbers, b.numbers), (fa.days, fb.days), (fa.months, fb.months)):
        if x and y and not x & y:
            return None
    if fa.places and fb.places and not fa.places & fb.places:
        return None
    return "agrees on " + _shown(shared)


def _compatible(a: Said, b: Said) -> str | None:
    """Both can be true, and a rule says why."""
    if a.negative != b.negative:
        return None
    # An allergy or a diet, and a dish made without what it excludes.
    for x, y in ((a, b), (b, a)):
        avoided = {f"word:{t}" for t in y.without} | {
            _vocab()["family_of"][t] for t in y.without if t in _vocab()["family_of"]
        }
        if (x.allergens | x.diet_excludes) & avoided:
            return "made without what it excludes"
    if _ONLY.search(a.folded + " " + b.folded) or _ONLY_FR.search(a.folded + " " + b.folded):
        return None  # "only speaks French": a second value may contradict it
    # "Also", "aussi", "again": an addition to what is known.
    if (a.addition or b.addition) and a.core & b.core:
        return "an addition"
    # Diet against a plainly different food ("vegan" / "drinks oat milk" is not known).
    many = (a.core & b.core) & _vocab()["many"]
    if many and a.core - b.core and b.core - a.core:
        if a.allergens or b.allergens:
            return None
        return "another value of " + _shown(many)
    return None


def _same_core(x: frozenset | set, y: frozenset | set, loose: bool = False, strict=False) -> bool:
    """One says all the other says (equal, or inside); `loose`: most of the smaller one;
    `strict`: equal only."""
    if strict:
        return x == y
    if x <= y or y <= x:
        return bool(x or y)
    if loose:
        small = min(len(x), len(y))
        return small > 0 and len(x & y) / small >= 0.6
    return False


def _overlap(x: set | frozenset, y: set | frozenset) -> bool:
    """Some term in both, or two forms of one word ("infirmier" / "infirmiere")."""
    return bool(x & y) or any(facts._variants(s, t) for s in x for t in y)


def _shown(values) -> str:
    return ", ".join(sorted(str(v) for v in values))


# The verdict of a whole check (shared with the web app, which may re-judge the pairs).
summary = contract.consistency_summary
