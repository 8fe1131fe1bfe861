"""What ikario_rag knows of English and French words: stems, stop words, a small French ->
English lexicon, numbers, days and months, negation, people and things a fact can be about,
and the life domains a constraint (an allergy, a diet, an injury) matters in.

The embedding model (all-MiniLM-L6-v2) is English-first: French sentences all score
0.4-0.6 against each other whatever they say, and a French word never matches its English
twin. So the rules of relevance, dedup and contradiction compare *terms*: folded (no case,
no accents), stemmed by the Snowball stemmer of the text's language (PyStemmer), and mapped through
`CANON` to one English term where a French or English synonym is common ("soeur" and
"sister" are the term "sister"; "mum", "maman" and "mother" are "mother").
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

import Stemmer  # PyStemmer: the Snowball stemmers in C
from stop_words import get_stop_words

from ikario_rag import text


def words(block: str) -> frozenset[str]:
    """The words of a block of text, split on white space (word lists written as text)."""
    return frozenset(block.split())


_words = words


# -- one English term for common words of both languages (folded, before stemming) ----------
_CANON_GROUPS = {
    "mother": "mother mum mom mummy mommy mama maman mere",
    "father": "father dad daddy papa pere",
    "sister": "sister sisters soeur soeurs",
    "brother": "brother brothers frere freres",
    "son": "son sons fils",
    "daughter": "daughter daughters fille filles",
    "child": "child children kid kids enfant enfants gamin gamins",
    "husband": "husband mari",
    "wife": "wife epouse femme",
    "partner": "partner boyfriend girlfriend compagnon compagne conjoint conjointe copain copine",
    "friend": "friend friends ami amie amis amies pote potes",
    "grandfather": "grandfather grandpa granddad grand-pere grandpere papi papy",
    "grandmother": "grandmother grandma granny grand-mere grandmere mamie",
    "grandchild": "grandson granddaughter grandchild grandchildren petit-fils petite-fille",
    "godchild": "godson goddaughter godchild filleul filleule",
    "godparent": "godmother godfather parrain marraine",
    "fiance": "fiance fiancee",
    "flatmate": "flatmate roommate housemate colocataire coloc",
    "uncle": "uncle oncle",
    "aunt": "aunt tante",
    "cousin": "cousin cousine cousins",
    "nephew": "nephew neveu",
    "niece": "niece",
    "neighbour": "neighbour neighbor voisin voisine",
    "colleague": "colleague coworker collegue",
    "boss": "boss manager patron patronne",
    "teacher": "teacher prof professeur professeure enseignant enseignante",
    "helmet": "helmet casque",
    "cat": "cat cats chat chatte chats",
    "dog": "dog dogs chien chienne chiens",
    "horse": "horse cheval jument",
    "rabbit": "rabbit lapin",
    "car": "car voiture auto bagnole",
    "bike": "bike bicycle velo",
    "motorbike": "motorbike motorcycle moto",
    "boat": "boat sailboat bateau voilier",
    "house": "house home maison",
    "flat": "flat apartment appartement appart",
    "job": "job work travail boulot emploi embauche",
    "doctor": "doctor gp medecin docteur",
    "medicine": "medicine medication drug drugs medicament medicaments",
    "allergy": "allergy allergic allergies allergie allergique allergiques",
    "birthday": "birthday anniversaire",
    "name": "name named called nom appelle appellent",
    "wedding": "wedding mariage",
    "trip": "trip journey voyage",
    "holiday": "holiday holidays vacation vacances",
    "school": "school ecole college lycee",
    "university": "university universite fac",
    "vegetarian": "vegetarian vegetarien vegetarienne",
    "vegan": "vegan vegane vegans",
    "meat": "meat viande",
    "fish": "fish poisson",
    "cheese": "cheese fromage",
    "egg": "egg eggs oeuf oeufs",
    "peanut": "peanut peanuts arachide arachides cacahuete cacahuetes",
    "nut": "nut nuts noix",
    "milk": "milk lait",
    "coffee": "coffee cafe espresso latte cappuccino",
    "interview": "interview entretien",
    "wine": "wine vin",
    "beer": "beer beers biere bieres",
    "alcohol": "alcohol alcool",
    "smoke": "smoke smokes smoking smoked fume fumer fumes",
    "drive": "drive drives driving drove conduire conduit conduis",
    "swim": "swim swims swimming swam nager nage piscine",
    "run": "run runs running ran courir cours court course footing jogging",
    "live": "live lives living lived habite habiter habitent vis vit vivre vivent",
    "work": "works working worked travaille travailler",
    "love": "love loves loved adore adores aime aimes",
    "hate": "hate hates hated deteste detestes",
    "piano": "piano",
    "guitar": "guitar guitare",
    "english": "english anglais",
    "french": "french francais",
    "spanish": "spanish espagnol",
    "german": "german allemand",
    "japan": "japan japon",
    "spain": "spain espagne",
    "italy": "italy italie",
    "germany": "germany allemagne",
    "england": "england angleterre",
    "iceland": "iceland islande",
}
CANON: dict[str, str] = {w: term for term, group in _CANON_GROUPS.items() for w in group.split()}

# People a fact can be about besides the user (subjects: "my sister" is not "me").
PEOPLE = _words(
    "mother father sister brother son daughter child husband wife partner friend grandfather "
    "grandmother grandchild godchild godparent fiance flatmate uncle aunt cousin nephew niece "
    "neighbour colleague boss teacher baby "
    "parent parents family famille bebe"
)
# Things a person owns or keeps (a thing is not its owner: "Tom's car" is not "Tom").
THINGS = _words(
    "cat dog horse rabbit car bike motorbike boat house flat laptop computer phone camera "
    "helmet garden ordinateur telephone casque jardin hamster parrot perroquet"
)
RELATION_WORDS = PEOPLE | THINGS

NUMBER_WORDS = {
    w: str(n)
    for n, group in enumerate(
        [
            "zero",
            "one un une",
            "two deux",
            "three trois",
            "four quatre",
            "five cinq",
            "six",
            "seven sept",
            "eight huit",
            "nine neuf",
            "ten dix",
            "eleven onze",
            "twelve douze",
            "thirteen treize",
            "fourteen quatorze",
            "fifteen quinze",
            "sixteen seize",
            "seventeen",
            "eighteen",
            "nineteen",
            "twenty vingt",
        ]
    )
    for w in group.split()
}
# "un"/"une"/"one" are articles far more often than numbers: only digits and the others count.
_NUMBER_ONLY = {w: n for w, n in NUMBER_WORDS.items() if w not in ("un", "une", "one")}

DAYS = {
    w: n
    for n, group in enumerate(
        [
            "monday mondays lundi lundis",
            "tuesday tuesdays mardi mardis",
            "wednesday wednesdays mercredi mercredis",
            "thursday thursdays jeudi jeudis",
            "friday fridays vendredi vendredis",
            "saturday saturdays samedi samedis",
            "sunday sundays dimanche dimanches",
        ]
    )
    for w in group.split()
}
MONTHS = {
    w: n
    for n, group in enumerate(
        [
            "january janvier",
            "february fevrier",
            "march mars",
            "april avril",
            "may mai",
            "june juin",
            "july juillet",
            "august aout",
            "september septembre",
            "october octobre",
            "november novembre",
            "december decembre",
        ],
        start=1,
    )
    for w in group.split()
}

NEGATIONS = _words("not no never nor none nobody nothing cannot pas jamais rien aucun aucune ni")

# Opposites (terms, both directions). Kept short: a false contradiction costs more than a
# missed one.
_OPPOSITES = [
    ("love", "hate"),
    ("like", "dislike"),
    ("always", "never"),
    ("toujours", "jamais"),
    ("alive", "dead"),
    ("vivant", "mort"),
    ("married", "single"),
    ("married", "divorced"),
    ("marie", "celibataire"),
    ("marie", "divorce"),
    ("open", "closed"),
    ("ouvert", "ferme"),
    ("true", "false"),
    ("vrai", "faux"),
    ("win", "lose"),
    ("won", "lost"),
    ("accept", "refuse"),
    ("accepted", "refused"),
    ("employed", "unemployed"),
    ("sober", "drunk"),
]
OPPOSITES: dict[str, set[str]] = {}
for _a, _b in _OPPOSITES:
    OPPOSITES.setdefault(_a, set()).add(_b)
    OPPOSITES.setdefault(_b, set()).add(_a)

# Life domains a message can be about, and what in a fact constrains them (plain words of
# both languages, compared as terms): a message about a meal makes a food allergy or a diet
# relevant, a medical question a drug allergy or a condition, exercise or carrying loads an
# injury or a race, packing for a trip a flight, a language's practice the one learnt,
# somewhere nearby where the user lives, the family a relative.
_DOMAIN_WORDS = {
    "food": """cook cooking cooks dinner lunch breakfast brunch meal meals recipe recipes menu
        snack snacks cake bake baking eat eating food restaurant dessert picnic barbecue
        lunchbox curry dish supper host hosting diner dejeuner repas recette recettes gateau
        manger nourriture cuisiner cuisine apero gouter plat invite inviter preparer sauce
        sauces""",
    "health": """doctor prescribe prescribing prescription pill pills antibiotic antibiotics
        painkiller painkillers anti-inflammatory anti-inflammatories infection sore fever
        headache migraine pain throat pharmacy dentist surgery vaccine vaccines sick ill flu
        cough symptom symptoms tablet tablets dose medicine medication blood sugar glucose
        insulin ordonnance prescrire
        antibiotique antibiotiques antidouleur antidouleurs anti-inflammatoire angine fievre
        douleur mal malade grippe toux dentiste operation vaccin vaccins comprime comprimes
        soigner traitement""",
    "travel": """trip trips travel travelling traveling holiday holidays vacation pack
        packing suitcase luggage flight flights visa passport hotel itinerary abroad voyage
        voyager vacances valise valises bagage bagages vol vols passeport hotel sejour
        itineraire etranger""",
    "work": """work job office shift shifts boss colleague colleagues meeting career students
        pupils class lesson lessons patients travail boulot bureau garde gardes collegue
        collegues patron reunion carriere eleves classe cours patients horaires schedule""",
    "exercise": """run running race marathon 10k training train workout gym hike hiking
        football sport jog jogging exercise courir course footing entrainement randonnee
        musculation tennis lift lifting carry carrying move moving heavy demenager demenage
        cartons porter lourd lourdes""",
    "language": """language languages phrase phrases vocabulary grammar langue langues
        vocabulaire grammaire""",
    "nearby": """nearby near local around pres alentours coin""",
    "family": """family relatives famille""",
}
_CONSTRAINT_WORDS = {
    "food": """vegetarian vegan coeliac celiac gluten lactose diabetes diabetic halal kosher
        diet peanut peanuts nut nuts egg eggs shellfish milk dairy sesame soy coeliaque
        intolerante regime crustaces diabetique fruits coque meat viande""",
    "travel": """trip holiday holidays vacation travel voyage vacances partons sejour japan
        spain italy germany england iceland fly flying flight flights partir part pars""",
    "work": """work job developer engineer nurse teacher doctor lawyer architect startup
        company hospital school college infirmier infirmiere professeur professeure college
        ecole entreprise hopital chu cabinet architecte developpeur ingenieur shifts works
        working travaille""",
    "health": """allergy allergic intolerant penicillin aspirin ibuprofen codeine sulfa
        morphine latex antibiotic antibiotics asthma diabetes diabetic insulin epilepsy
        pregnant arthritis migraine migraines hernia bleeding penicilline aspirine codeine
        asthme diabete diabetique insuline enceinte arthrose hernie supporte""",
    "exercise": """injured injury knee ankle back hernia surgery operated asthma arthritis
        genou dos hernie discale opere operer blessure cheville asthme charges marathon""",
    "language": """learn learning learns speak speaks fluent apprends apprend apprendre parle
        parlons couramment""",
    "nearby": """live lives living habite habitons habitent""",
    "family": """mother father sister brother son daughter parents mere pere soeur frere fils
        fille""",
}


def _as_terms(block: str) -> frozenset[str]:
    return frozenset(term(w, lang) for w in raw_words(block) for lang in ("en", "fr"))


# Words that say nothing of what a message is about, on top of the stop words: chat and
# question scaffolding ("can you tell me", "dis-moi").
SCAFFOLD = _words(
    "tell know remember told say said think thought want need please thanks thank hello hi "
    "hey help idea ideas tip tips advice suggest recommend give show explain write make "
    "question again sure okay yes one thing things anything something good great nice "
    "dis sais souviens rappelle dit pense veux besoin merci bonjour salut aide idee idees "
    "conseil conseils suggere recommande donne montre explique ecris fais question encore "
    "chose choses quelque bien super deja"
)

_PLACE_PREPOSITIONS = _words("in at to from near en dans chez pres vers")
_LEADS_TO_PLACE = _words("a au aux")  # French "a Lyon", "au Japon" (folded)
_ACCENTED = re.compile(r"[àâçéèêëîïôûùüÿœæ]", re.IGNORECASE)
# Frequent short words that tell French from English (folded); accents count for French.
_FRENCH_HINTS = _words(
    "le la les un une des du de et est je tu il elle nous vous ils elles que qui quoi ce cette "
    "ces mon ma mes ton ta tes son sa ses pas ne plus avec pour dans sur sais souviens rappelle "
    "moi toi suis es sont ai as avons avez ete etait mais ou donc bonjour merci oui non parle "
    "quel quelle quels quelles comment pourquoi aussi tres bien fait faire au aux chez"
)
_ENGLISH_HINTS = _words(
    "the a an and is are was were i you he she we they it that what which who this these those "
    "my your his her our their not no with for in on at of to do does did know remember me "
    "about have has had be been am but or so hello thanks yes how why also very well make from"
)
# A text's opening tells its language: reading more of a 100k-character message would only
# cost time on the event loop the turn shares with every other user.
LANGUAGE_SCAN_CHARS = 2000


def language(value: str, default: str | None = "en") -> str | None:
    """ "fr" or "en": the text's language by its common words and accents; `default` when
    it cannot tell ("ok"). The one language guess of the project (memory imports it)."""
    value = value[:LANGUAGE_SCAN_CHARS]
    toks = text.tokens(value)
    french = sum(t in _FRENCH_HINTS for t in toks) + len(_ACCENTED.findall(value))
    english = sum(t in _ENGLISH_HINTS for t in toks)
    if french == english:
        return default
    return "fr" if french > english else "en"


@cache
def _stemmer(lang: str):
    return Stemmer.Stemmer("french" if lang == "fr" else "english")


# The stop-words package's French list also holds content words that facts are made of.
_NOT_STOPS_FR = _words(
    "dos droite haut nom nommé personne personnes essai mot parole point sujet valeur etat "
    "debut force piece nouveau nouveaux grande bon fois chose choses devoir dire faire"
)
_CONTRACTIONS = _words(
    "doesn don isn aren wasn weren didn haven hasn hadn wouldn couldn shouldn won ll ve re "
    "etre ete suis es sont sommes etes ai avez avons ont fait"
)


@cache
def stop_words() -> frozenset[str]:
    """Stop words of both languages (folded): ikario_rag's own list, the stop-words
    package's French one (less the content words above) and English contractions."""
    french = {text.fold(w) for w in get_stop_words("fr")} - _NOT_STOPS_FR
    return frozenset(text.STOPWORDS | french | _CONTRACTIONS)


# Stop words when two facts are compared: the usual ones, but a verb such as "like" or
# "own" is what a fact says ("I like my neighbour's dog" is not "I own my neighbour's dog").
def fact_stops() -> frozenset[str]:
    return stop_words() - {"like", "own", "always", "ever", "only"}


_RAW_CASED = re.compile(r"[0-9A-Za-zÀ-ÖØ-öø-ÿŒœÆæ]+(?:-[0-9A-Za-zÀ-ÖØ-öø-ÿŒœÆæ]+)*")


def cased_words(value: str) -> list[tuple[str, bool]]:
    """(lower-case word with its accents, whether it was written with a capital): the
    French stemmer needs the accents, names keep their capital. "l'épaule" gives "l" and
    "épaule", "doesn't" gives "doesn" and "t"; a hyphenated compound is one word when the
    lexicon knows it ("grand-mère"), else its parts joined ("e-mail": "email")."""
    # Stored and searched text is clean already (private spans and controls removed).
    cleaned = value.replace("\u2019", "'").replace("'", " ")
    out = []
    for word in _RAW_CASED.findall(cleaned):
        lower = word.lower()
        if "-" not in lower or text.fold(lower) in CANON:
            # Most words (a search reads ~900): one append, no list of parts.
            out.append((lower, word[:1].isupper()))
            continue
        pieces = lower.split("-")
        # "e-mail" is one word; "sais-tu", "anti-inflammatoire" are several.
        parts = [lower.replace("-", "")] if min(map(len, pieces)) == 1 else pieces
        capital = word[:1].isupper()
        out.extend((part, capital) for part in parts)
    return out


def raw_words(value: str) -> list[str]:
    """Lower-case words with their accents (see cased_words)."""
    return [word for word, _ in cased_words(value)]


# Accented words whose folded form is another word ("né" is not the "ne" of "ne ... pas").
_ACCENTED_CANON = {"né": "born", "née": "born", "nés": "born", "nées": "born"}
_NUMBER_UNIT = re.compile(r"^(\d+)(?:k|km|th|st|nd|rd|e|er|eme|ème)$")


@lru_cache(maxsize=65536)
def _fold(word: str) -> str:
    return text.fold(word)


@lru_cache(maxsize=65536)
def term(word: str, lang: str) -> str:
    """One lower-case word as a term: its English canonical form, a number, a day or month,
    or its stem (folded)."""
    if word in _ACCENTED_CANON:
        return _ACCENTED_CANON[word]
    glued = _NUMBER_UNIT.match(word)
    if glued:
        return str(int(glued.group(1)))
    folded = _fold(word)
    if folded in CANON:
        return CANON[folded]
    if folded in _NUMBER_ONLY:
        return _NUMBER_ONLY[folded]
    if folded.isdigit():
        return str(int(folded)) if len(folded) < 6 else folded
    if folded in DAYS:
        return f"day:{DAYS[folded]}"
    if folded in MONTHS and folded != "may":
        return f"month:{MONTHS[folded]}"
    return _fold(_stemmer(lang).stemWord(word))


@cache
def _about_stops() -> frozenset[str]:
    return stop_words() | SCAFFOLD


def terms(value: str, lang: str | None = None, stops: frozenset[str] | None = None) -> list[str]:
    """The terms of a text's content words, in order. `stops` (default: English and French
    stop words and chat scaffolding) are dropped, before and after stemming; relation,
    number, day and month words are kept even when they are stop words."""
    lang = lang or language(value)
    if stops is None:
        stops = _about_stops()
    out = []
    for word, capital in cased_words(value):
        folded = _fold(word)
        special = (
            word in _ACCENTED_CANON
            or _NUMBER_UNIT.match(word) is not None
            or folded in CANON
            or folded in _NUMBER_ONLY
            or folded in DAYS
            or (folded in MONTHS and folded != "may")
            or folded.isdigit()
        )
        if not special and (folded in stops or len(folded) < 2):
            continue
        found = term(word, lang)
        if special or found not in stops:
            out.append(found)
        # A capitalised word may be a name: stems differ between languages and with accents
        # ("Inès", "Fusée" stems to "fus"), so its folded form is a term as well.
        if capital and not special and folded != found:
            out.append(folded)
    return out


def numbers(value: str) -> set[str]:
    """Numbers a text states, written in digits or words ("two" and "2" are one number)."""
    found = set()
    for word in text.tokens(value):
        if word.isdigit():
            found.add(str(int(word)) if len(word) < 6 else word)
        elif word in _NUMBER_ONLY:
            found.add(_NUMBER_ONLY[word])
    # "10k", "5km", "4th": a number glued to a unit.
    for match in re.finditer(r"\b(\d+)(?:k|km|th|st|nd|rd|e|er|eme)\b", text.fold(value)):
        found.add(str(int(match.group(1))))
    return found


def days(value: str) -> set[int]:
    return {DAYS[w] for w in text.tokens(value) if w in DAYS}


def months(value: str) -> set[int]:
    # "may" is a verb far more often than a month: only as a month with a day or a year.
    toks = text.tokens(value)
    out = set()
    for pos, word in enumerate(toks):
        if word not in MONTHS:
            continue
        if word == "may":
            near = toks[max(0, pos - 1) : pos + 2]
            if not any(t.isdigit() for t in near):
                continue
        out.add(MONTHS[word])
    return out


def names(value: str) -> set[str]:
    """Folded capitalised words that are not the first word of a sentence: names of people,
    pets, places and things ("Emma", "Blue Thunder", "Titine")."""
    out = set()
    for sentence in re.split(r"(?<=[.!?;:])\s+|\n", value):
        words = re.findall(r"[^\W\d_][\w'’-]*", sentence)
        for pos, word in enumerate(words):
            bare = re.split(r"['’]", word)[0]
            if pos == 0 or not bare[:1].isupper() or len(bare) < 2:
                continue
            folded = text.fold(bare)
            if folded in stop_words() or folded in CANON or folded in DAYS or folded in MONTHS:
                continue
            out.add(folded)
    return out


def places(value: str) -> set[str]:
    """Names right after a place preposition ("in Leeds", "a Nantes", "au Japon"), folded."""
    toks = text.tokens(value)
    capitalised = names(value) | {text.fold(w) for w in re.findall(r"\b[A-Z][\w-]+", value)}
    out = set()
    for pos, word in enumerate(toks[:-1]):
        if word in _PLACE_PREPOSITIONS or word in _LEADS_TO_PLACE:
            nxt = toks[pos + 1]
            if nxt in ("the", "la", "le", "les", "l", "a", "my", "mon", "ma") and pos + 2 < len(
                toks
            ):
                nxt = toks[pos + 2]
            if nxt in capitalised and nxt not in DAYS and nxt not in MONTHS:
                out.add(CANON.get(nxt, nxt))
    return out


def negated(value: str) -> bool:
    """A negative statement: "not", "n't", "never", "ne ... pas", "jamais"..."""
    folded = text.fold(value)
    if re.search(r"n't\b|\bcan not\b", folded):
        return True
    toks = text.tokens(value)
    if any(t in NEGATIONS for t in toks):
        return True
    # French "ne ... plus" / "n'... plus" is a negation as well as an ending.
    return ("ne" in toks or "n" in toks) and "plus" in toks


def ceased(value: str) -> bool:
    """Says a habit ended: "stopped smoking", "quit", "gave up", "no longer", "arrete de",
    "ne ... plus"."""
    folded = text.fold(value)
    if re.search(
        r"\b(stopped|quit|gave up|given up|no longer|not any ?more|arrete de|"
        r"arretee de|cesse de|renonce a)\b",
        folded,
    ):
        return True
    toks = text.tokens(value)
    return ("ne" in toks or "n" in toks) and "plus" in toks


def ongoing(value: str) -> bool:
    folded = text.fold(value)
    return bool(
        re.search(
            r"\b(still|every (day|morning|evening|night|week)|daily|encore|tous les "
            r"(jours|matins|soirs)|chaque (jour|matin|soir))\b",
            folded,
        )
    )


def addition(value: str) -> bool:
    """Marks an addition ("too", "also", "as well", "aussi", "non plus")."""
    folded = text.fold(value)
    return bool(re.search(r"\b(too|also|as well|either|aussi|egalement|non plus|again)\b", folded))


_POSSESSIVES = words(
    "my our his her their your s mon ma mes notre nos son sa ses leur leurs ton ta tes de du"
)


# A person named this early in a sentence is what it is about ("My sister Emma is ...").
_LEADING = 4


def people_of(value: str, leading: bool = False) -> set[str]:
    """The people of someone's life a text names ("my sister", "Emma's son", "le mari de
    ma soeur"): PEOPLE terms after a possessive, not a role ("I am a teacher"). With
    `leading`, only those the text opens with: who it is about, not whom it mentions
    ("We go to Iceland with my partner" is about us)."""
    found = set()
    toks = [text.fold(w) for w in raw_words(value)]
    for pos, word in enumerate(toks):
        if leading and pos >= _LEADING:
            break
        canon = CANON.get(word, word)
        if canon in PEOPLE and pos > 0 and toks[pos - 1] in _POSSESSIVES:
            found.add(canon)
    return found


@cache
def _domain_terms() -> dict[str, frozenset[str]]:
    return {name: _as_terms(words) for name, words in _DOMAIN_WORDS.items()}


@cache
def _constraint_terms() -> dict[str, frozenset[str]]:
    return {name: _as_terms(words) for name, words in _CONSTRAINT_WORDS.items()}


def domains(terms_: set[str]) -> set[str]:
    """The life domains a message's terms touch (food, health, exercise)."""
    return {name for name, words in _domain_terms().items() if terms_ & words}


# What one is allergic to when it is not food (an allergy is to a food unless it says so).
_NOT_FOOD = """cat cats dog dogs horse pollen dust mites latex bee bees wasp wasps penicillin
    aspirin ibuprofen codeine sulfa morphine antibiotic antibiotics drug drugs medicine
    chat chats chien chiens pollen poussiere acariens abeille abeilles guepe guepes
    penicilline aspirine codeine antibiotique antibiotiques medicament medicaments"""


@cache
def _not_food_terms() -> frozenset[str]:
    return _as_terms(_NOT_FOOD)


def constrained(terms_: set[str]) -> set[str]:
    """The domains a fact constrains (an allergy, a diet, a condition, an injury). An
    allergy or an intolerance constrains meals unless it is to something else (a pet,
    pollen, a drug)."""
    found = {name for name, words in _constraint_terms().items() if terms_ & words}
    if terms_ & {"allergy", *_as_terms("intolerant intolerance intolerante")} and not (
        terms_ & _not_food_terms()
    ):
        found.add("food")
    return found
