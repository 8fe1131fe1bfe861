"""What a fact is about: its domain of the person's life, its slot when it can hold one value
at a time, whether it ends a value, and the words of the questions it answers.

Facts are short third-person sentences ("The user lives in Porto", "L'utilisateur est
végétarien", "Alice's cat is called Miso"), written by the model or by the rules
(memory/learning/offline_facts.py), English or French; they are read folded (no case, no
accents). Rules, no model: they must hold offline.

- A **domain** groups the person sheet (memory/learning/person/sheet.py), most important
  first: who they are, where they live, their work, their family...
- A **slot** is what holds one value at a time (where the user lives, their job, their
  employer, diet, relationship, age, a child's age, a pet's name): a newer fact of the same
  slot supersedes the older one (memory/learning/person/newest.py). Languages, allergies,
  hobbies and children accumulate: they have no slot.
- A **negation** ("no longer", "ne ... plus", "stopped") ends the value it names.
- The **words** are what a question about the fact says without repeating it ("where did I
  spend my childhood?" for "grew up in Dakar"): stored as the memory's concepts, which the
  memory server indexes and scores with the text (docs/MEMORY_TOOLS.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.utils.translation import gettext_noop

from ikario_rag.text import fold
from memory.learning import offline_facts

_JOB = "|".join(sorted(offline_facts.JOBS, key=len, reverse=True))
_PEOPLE = "|".join(sorted(offline_facts.PEOPLE, key=len, reverse=True))
_BREEDS = (
    "greyhound|beagle|labrador|retriever|terrier|spaniel|poodle|collie|dachshund|husky|"
    "bulldog|whippet|lurcher|corgi|pug|caniche|teckel|berger"
)
_PET = (
    f"{_BREEDS}|cat|kitten|dog|puppy|horse|rabbit|hamster|parrot|tortoise|bird|guinea pig|"
    "chat|chatte|chaton|chien|chienne|chiot|cheval|lapin|hamster|perroquet|tortue|oiseau"
)
# Who a fact is about when it is the user: "the user", "l'utilisateur", or a first name.
_USER = r"(?:the user|l'utilisat(?:eur|rice)|[a-z][a-z-]+)"
_OWN = r"(?!(?:first |full )?name|age|birthday|job|diet|health)"  # "the user's name" is theirs
_NOT_USER = re.compile(
    rf"^(?:{_USER}'s {_OWN}|(?:le|la|les|son|sa|ses) (?:{_PEOPLE}|{_PET})\b|"
    rf"(?:{_PEOPLE}|{_PET})\b)"
)

NEGATION = re.compile(
    r"\b(no longer|not anymore|any ?more|stopped|quit|gave up|has left|left (?:the|their|her|his)|"
    r"(?:ne|n') ?\w+ plus\b|a arrete|a quitte|ne plus|n'est plus|plus de)\b"
)

# (slot, pattern on the folded fact, whose own it is): checked in order.
_SLOTS = (
    (
        "employer",
        re.compile(
            r"\b(works|working|employed|travaille|bosse) (?:now )?(at|for|by|chez|pour)\b|"
            r"\bjoined\b"
        ),
    ),
    (
        "job",
        re.compile(
            rf"\b(works as|working as|job is|travaille comme|became an?|est devenue?|metier)\b|"
            rf"\b(as an?|comme) (?:\w+ )?({_JOB})s?\b|"
            rf"\b(is|est) (?:now |a |an |un |une |maintenant )*(?:\w+ )?({_JOB})s?\b"
        ),
    ),
    (
        "home",
        re.compile(
            r"\b(lives|is living|now lives|moved|has moved|relocated|is based|settled|habite|vit|"
            r"a demenage|s'est installe(?:e|s|es)?|est installe(?:e|s|es)?|reside)\s+"
            r"(?:now\s+|maintenant\s+)?(?:back\s+)?(in|to|at|near|outside|a|au|aux|en|dans|pres)\b|"
            r"\b(left|quitte) [a-z-]+ (for|pour) |\bmoved to .*, leaving\b|"
            r"\ba rejoint .*, apres avoir quitte\b"
        ),
    ),
    (
        "diet",
        re.compile(
            r"\b(vegetarian|vegan|pescatarian|flexitarian|omnivore|eat(?:s|ing)? (?:meat|fish)|"
            r"vegetarien\w*|vegane?|vegetalien\w*|pescetarien\w*|flexitarien\w*|"
            r"mange (?:plus |pas )?(?:de la |du |de )?(?:viande|poisson))\b"
        ),
    ),
    (
        "relationship",
        re.compile(
            r"\b(married|engaged|divorced|single|widowed|separated|in a relationship|dating|"
            r"has a (?:boyfriend|girlfriend|partner)|mariee?|fiancee?|divorcee?|celibataire|veuf|"
            r"veuve|separee?|en couple|pacsee?|seeing (?:someone|somebody)|"
            r"est avec (?!(?:sa|son|ses|des|les|le|la|un|une|eux|elle|lui)\b)[a-z][a-z-]*)\b"
        ),
    ),
    (
        "car",
        re.compile(
            r"\b(drives?|driving|bought|sold|replaced|roule en|conduit|achete|vendu|remplace|"
            r"a la place de)\b"
            r".*\b(car|voiture|tesla|prius|toyota|renault|clio|zoe|peugeot|citroen|volvo|"
            r"volkswagen|bmw|audi|mercedes|ford|fiat|honda|nissan|kia|hyundai|dacia|"
            r"skoda|opel|twingo|yaris|corolla)\b"
        ),
    ),
    ("age", re.compile(r"\b(is|turned|a|aura|a eu) (\d{1,3})(?: years old| ans)?\b")),
)
_CHILD_AGE = re.compile(
    rf"^(?:{_USER}'s |(?:le|la|son|sa) )(son|daughter|child|kid|baby|fils|fille|enfant|bebe)"
    rf"(?: de {_USER})?(?:,? ([a-z-]+),?)? (?:is|turns|turned|a|aura|fete) (\d{{1,2}})\b"
)
# One of their children by first name: "Idris is 7", "Lina a 6 ans" (a grown-up's age is not
# a child's: under 18 only).
_NAMED_CHILD_AGE = re.compile(
    r"^(?!the user|l'utilisat)([a-z][a-z-]+) (?:is|turned|turns|a) (1[0-7]|\d)(?: ans| years old)?$"
)
_PET_NAME = re.compile(
    rf"\b({_PET})\b(?: \w+)?(?: de {_USER})?,? (?:qui )?(?:is |est )?"
    r"(?:called|named|s'appelle|nommee?|appelee?) ([a-z-]+)"
)
# A pet's slot is its species: a kitten grows into the cat, "une chatte" is "le chat".
_SPECIES = {
    **dict.fromkeys(_BREEDS.split("|"), "dog"),
    "kitten": "cat",
    "puppy": "dog",
    "chatte": "chat",
    "chaton": "chat",
    "chienne": "chien",
    "chiot": "chien",
}


@dataclass(frozen=True)
class Domain:
    key: str
    title: str  # the sheet's heading, in English as stored (gettext_noop: read translated)
    words: tuple[str, ...]  # what a question about such a fact says (EN, FR)


DOMAINS = (
    Domain("identity", gettext_noop("Identity"), ("identity", "age", "name", "identité")),
    Domain("home", gettext_noop("Home and places"), ("home", "city", "live", "domicile", "ville")),
    Domain("work", gettext_noop("Work"), ("job", "work", "living", "career", "métier", "travail")),
    Domain("family", gettext_noop("Family and people"), ("family", "relatives", "famille")),
    Domain(
        "health",
        gettext_noop("Health and diet"),
        ("health", "diet", "food", "eat", "meal", "santé", "régime", "repas"),
    ),
    Domain("states", gettext_noop("Current states"), ("now", "currently", "moment")),
    Domain("plans", gettext_noop("Plans"), ("plan", "trip", "project", "projet", "voyage")),
    Domain("languages", gettext_noop("Languages"), ("languages", "speak", "langues", "parle")),
    Domain("pets", gettext_noop("Pets"), ("pet", "animal", "animaux")),
    Domain(
        "hobbies",
        gettext_noop("Hobbies and tastes"),
        ("hobby", "free time", "weekend", "loisirs", "passion"),
    ),
    Domain("answers", gettext_noop("How they like answers"), ("answer", "reply", "réponse")),
    Domain("other", gettext_noop("Also"), ()),
)
BY_KEY = {d.key: d for d in DOMAINS}

# What the rules' themes (offline_facts._THEMES) say of a fact's domain.
_THEME_DOMAIN = {
    "identity": "identity",
    "places": "home",
    "work": "work",
    "family": "family",
    "health": "health",
    "diet": "health",
    "plans": "plans",
    "languages": "languages",
    "hobbies": "hobbies",
    "likes": "hobbies",
}
_SLOT_DOMAIN = {
    "home": "home",
    "job": "work",
    "employer": "work",
    "diet": "health",
    "relationship": "identity",
    "age": "identity",
    "child_age": "family",
    "pet_name": "pets",
    "car": "other",
}
_OTHERS = re.compile(rf"^(?:{_USER}'s |(?:le|la|les|son|sa|ses) )?({_PET})\b")
# Checked in order: the first that matches is the fact's domain.
_DOMAIN_WORDS = (
    (
        "answers",
        re.compile(
            r"\b(answers?|replies|reponses?|tone|format|bullet points?|concise|detailed|emojis?|"
            r"tutoie|vouvoie|explanations?|explications?)\b"
        ),
    ),
    ("pets", re.compile(rf"\b({_PET}|cats|dogs|chats|chiens|pet|vet|veterinaire)\b")),
    (
        "languages",
        re.compile(
            r"\b(speaks?|fluent|bilingual|native|mother tongue|parle|couramment|bilingue|"
            r"langue maternelle|learning (?:\w+ )?(?:french|english|spanish|german|italian|"
            r"portuguese|japanese|chinese|arabic|russian))\b"
        ),
    ),
    (
        "health",
        re.compile(
            r"\b(allerg\w*|intoleran\w*|diabet\w*|asthma\w*|coeliac|celiac|coeliaque|gluten|"
            r"lactose|vegetarian|vegan|pescatarian|vegetarien\w*|vegane?|vegetalien\w*|diet|"
            r"regime|eats|mange|drinks|boit|migraine\w*|epilep\w*|adhd|tdah|arthritis|arthrose|"
            r"eczema|condition|medication|traitement|medicament|surgery|operation|pregnant|"
            r"enceinte|blood pressure|tension|cholesterol|depression|anxiety|anxiete|injur\w*|"
            r"blesse\w*|back pain|mal au dos)\b"
        ),
    ),
    (
        "work",
        re.compile(
            rf"\b(works?|working|job|career|employer|company|office|colleague|boss|shifts?|"
            rf"travaille|boulot|travail|metier|entreprise|bureau|collegue|patron|studies|"
            rf"student|etudie|etudiante?|university|universite|retired|retraitee?|{_JOB})\b"
        ),
    ),
    (
        "home",
        re.compile(
            r"\b(lives?|living|moved|relocated|based|grew up|originally|hometown|born in|"
            r"habite|vit|demenage|grandi|originaire|nee? a|flat|apartment|house|appartement|"
            r"maison|neighbourhood|quartier)\b"
        ),
    ),
    ("family", re.compile(rf"\b({_PEOPLE})\b")),
    (
        "identity",
        re.compile(
            r"\b(name is|called|years old|ans|born|nee?|nationality|nationalite|married|single|"
            r"divorced|mariee?|celibataire)\b"
        ),
    ),
    (
        "hobbies",
        re.compile(
            r"\b(likes?|loves?|enjoys?|hates?|prefers?|fan|favou?rite|hobby|plays?|practi[cs]es?|"
            r"aime|adore|deteste|prefere|joue|pratique|passion)\b"
        ),
    ),
)

# Words of the questions a slot's fact answers, EN and FR (kept short: each is a label the
# memory server matches, and a long list would match unrelated questions).
_SLOT_WORDS = {
    "home": ("home", "live", "city", "weather", "domicile", "habite", "ville"),
    "job": ("job", "work", "living", "profession", "métier", "travail"),
    "employer": ("employer", "company", "work", "job", "employeur", "entreprise"),
    "diet": ("diet", "food", "eat", "meal", "restaurant", "order", "menu", "régime", "repas"),
    "relationship": ("partner", "relationship", "couple", "conjoint"),
    "age": ("age", "old", "birthday", "âge"),
    "child_age": ("child", "age", "old", "enfant", "âge"),
    "pet_name": ("pet", "animal", "name", "nom"),
    "car": ("car", "vehicle", "drive", "voiture", "véhicule"),
}
_CHILDHOOD = re.compile(
    r"\b(grew up|raised|childhood|born in|originally from|a grandi|enfance|nee? a|originaire)\b"
)
_CHILDHOOD_WORDS = ("childhood", "grew up", "hometown", "raised", "enfance", "grandi")
_ALLERGY = re.compile(r"\b(allerg\w*|intoleran\w*|gluten|coeliac|celiac|coeliaque|lactose)\b")
_ALLERGY_WORDS = ("allergy", "food", "eat", "meal", "restaurant", "order", "menu", "repas")


def about_user(folded: str) -> bool:
    """The fact is about the user, not one of their people or things."""
    return not _NOT_USER.match(folded)


def slot_of(content: str) -> str | None:
    """The one-valued slot the fact fills ("home", "job", "child_age:zoe", "pet_name:cat"),
    or None (a fact that accumulates, or none of them)."""
    folded = fold(" ".join(str(content or "").split())).rstrip(".")
    child = _CHILD_AGE.match(folded)
    if child:
        return f"child_age:{child.group(2) or child.group(1)}"  # by name when said
    named = _NAMED_CHILD_AGE.match(folded)
    if named:
        return f"child_age:{named.group(1)}"
    pet = _PET_NAME.search(folded)
    if pet:
        return f"pet_name:{_SPECIES.get(pet.group(1), pet.group(1))}"
    if not about_user(folded):
        return None
    for slot, pattern in _SLOTS:
        if pattern.search(folded):
            return slot
    return None


def negates(content: str) -> bool:
    """The fact ends a value ("The user no longer eats meat", "n'habite plus à Lyon")."""
    return bool(NEGATION.search(fold(str(content or ""))))


def domain_of(content: str, metadata: dict | None = None) -> str:
    """The domain key of a fact (DOMAINS), from its metadata (a passing state, a plan, the
    rules' themes) and then its words."""
    meta = metadata or {}
    if meta.get("expires_at") or meta.get("ttl"):
        return "states"
    if meta.get("kind") == "goal":
        return "plans"
    folded = fold(str(content or ""))
    slot = slot_of(content)
    if slot:
        return _SLOT_DOMAIN[slot.split(":")[0]]
    if not about_user(folded):  # one of their people or pets
        return "pets" if _OTHERS.match(folded) else "family"
    for key, pattern in _DOMAIN_WORDS:
        if pattern.search(folded):
            return key
    for tag in meta.get("tags") or ():
        if tag in _THEME_DOMAIN:
            return _THEME_DOMAIN[tag]
    return "other"


def with_question_words(item: dict) -> dict:
    """An add_thoughts item whose concepts also hold the words of the questions its fact
    answers (after those the model wrote, if any)."""
    context = item.setdefault("context", {})
    words = question_words(item["content"], context)
    concepts = [c for c in context.get("concepts") or [] if c]
    context["concepts"] = concepts + [w for w in words if w not in concepts]
    return item


def question_words(content: str, metadata: dict | None = None) -> list[str]:
    """The words of the questions the fact answers without their words being in it: its
    slot's, else a childhood's or an allergy's, else its domain's."""
    folded = fold(str(content or ""))
    slot = slot_of(content)
    if slot:
        return list(_SLOT_WORDS[slot.split(":")[0]])
    if _CHILDHOOD.search(folded):
        return list(_CHILDHOOD_WORDS)
    if _ALLERGY.search(folded):
        return list(_ALLERGY_WORDS)
    return list(BY_KEY[domain_of(content, metadata)].words)
