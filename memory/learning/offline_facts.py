"""Facts said in passing, read by rules: the extractor of the no-key mode (English, French).

`facts_in(text)` reads the user's own words and returns the facts they state about
themselves as add_thoughts items, the shape memory/learning/extraction.py's model path writes
(content: one short third-person sentence in the statement's language; context: kind,
category, subjects, date, and a ttl for a passing state), tagged `rules` so a reader
knows no model wrote them.

Precision before recall: a sentence gives a fact only when it opens with the user as
subject ("I", "my", "we", "je", "mon", "on"...) followed by a verb or complement from the
lists below (who I am, family, health, diet, work, places, plans, likes). Questions,
hypotheticals, requests, anything addressed to the assistant ("you", "tu"), restated
memories, uncertain or conditional sentences and small talk give nothing. A passing state
("sick this week", "à Lyon jusqu'à vendredi") gets a ttl up to the end it names.

Pure: no database, no network; <private> spans are removed first.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from ikario_rag import secrets
from ikario_rag.private import strip as strip_private
from ikario_rag.text import fold
from memory.learning.about_others import asked_to_remember, sensitive_about_others

TAG = "rules"
MAX_SENTENCE = 240  # longer sentences are stories, not facts said in passing
MAX_FACTS = 20
DEFAULT_STATE_DAYS = 7  # a passing state with no end named ("I'm sick")

# --- words, folded (lower case, no accents) --------------------------------------------------


def _set(block: str) -> frozenset[str]:
    return frozenset(block.split())


_JOBS = _set(
    """accountant actor actress architect artist baker banker barber builder butcher carpenter
    cashier chef cleaner clerk coach consultant cook dentist designer developer programmer
    doctor driver economist editor electrician engineer farmer firefighter gardener
    hairdresser journalist judge lawyer solicitor librarian manager mechanic midwife musician
    nurse painter pharmacist photographer physician physiotherapist pilot plumber policeman
    policewoman professor psychologist researcher receptionist salesman scientist secretary
    singer student surgeon tailor teacher translator vet veterinarian waiter waitress writer
    paramedic therapist nanny carer caregiver freelancer entrepreneur founder analyst
    comptable acteur actrice architecte artiste boulanger boulangere banquier banquiere
    coiffeur coiffeuse boucher bouchere menuisier caissier caissiere cuisinier cuisiniere
    consultant consultante dentiste developpeur developpeuse medecin chauffeur economiste
    electricien electricienne ingenieur ingenieure agriculteur agricultrice pompier jardinier
    jardiniere journaliste juge avocat avocate bibliothecaire mecanicien sage-femme musicien
    musicienne peintre pharmacien pharmacienne photographe kinesitherapeute kine pilote
    plombier policier policiere professeur professeure prof psychologue chercheur chercheuse
    secretaire chanteur chanteuse chirurgien chirurgienne traducteur traductrice veterinaire
    serveur serveuse ecrivain ecrivaine infirmier infirmiere enseignant enseignante etudiant
    etudiante instituteur institutrice aide-soignant aide-soignante graphiste redacteur
    redactrice"""
)
_PEOPLE = _set(
    """mother mum mom father dad sister brother son daughter child children kid kids husband
    wife partner boyfriend girlfriend friend grandfather grandpa grandmother grandma
    grandson granddaughter uncle aunt cousin nephew niece neighbour neighbor colleague boss
    baby parents family fiance fiancee stepson stepdaughter twins daughters sons sisters
    brothers grandchildren grandkids in-laws
    mere maman pere papa soeur frere fils fille enfant enfants mari femme epouse compagnon
    compagne conjoint conjointe copain copine ami amie amis amies grand-pere grand-mere papi
    mamie petit-fils petite-fille oncle tante cousine neveu niece voisin voisine collegue
    patron patronne bebe parents famille fiancee jumeaux jumelles beau-pere belle-mere
    belle-soeur beau-frere filles soeurs freres petits-enfants"""
)
_THINGS = _set(
    """cat cats dog dogs horse horses rabbit car bike motorbike boat house flat apartment
    garden hamster parrot kitten puppy tortoise fish
    chat chats chatte chien chienne chiens cheval chevaux lapin voiture velo moto bateau
    maison appartement jardin perroquet chaton chiot tortue poisson"""
)
_OWNABLE = _PEOPLE | _THINGS
# Read by memory/learning/person/about.py (what a fact is about).
JOBS, PEOPLE = _JOBS, _PEOPLE
# What "my X" may open a fact with besides people and things.
_MY_TOPICS = _set(
    """birthday name job work office company team favourite favorite first husband's wife's
    anniversaire nom prenom travail boulot bureau entreprise equipe metier"""
)
_FAVOURITE = _set("favourite favorite prefere preferee preferes preferees")
_ILLNESS_PASSING = _set(
    """sick ill unwell cold flu covid fever sore throat migraine headache cough injured
    sprained broke broken hurt
    malade enrhume enrhumee grippe grippee rhume fievre angine covid migraine toux blesse
    blessee casse cassee foule foulee entorse convalescent convalescente"""
)
_CONDITIONS = _set(
    """diabetes diabetic asthma asthmatic celiac coeliac allergic allergy allergies
    intolerant epilepsy epileptic adhd dyslexic autistic arthritis migraines eczema
    pregnant
    diabete diabetique asthme asthmatique coeliaque allergique allergie allergies
    intolerant intolerante epilepsie epileptique tdah dyslexique autiste arthrose eczema
    enceinte"""
)
_DIETS = _set(
    """vegetarian vegan pescatarian vegetarien vegetarienne vegane vegetalien vegetalienne
    pescetarien pescetarienne gluten-free dairy-free lactose-free sugar-free teetotal"""
)
_STATUS = _set(
    """married divorced single engaged widowed retired unemployed self-employed freelance
    left-handed right-handed colour-blind color-blind deaf blind vegetarian vegan
    gluten-free dairy-free lactose-free sugar-free teetotal
    pescatarian diabetic celiac coeliac pregnant allergic intolerant lactose-intolerant
    dyslexic autistic asthmatic epileptic
    marie mariee divorce divorcee celibataire pacse pacsee fiance fiancee veuf veuve
    retraite retraitee chomage independant independante freelance gaucher gauchere droitier
    droitiere daltonien daltonienne sourd sourde aveugle vegetarien vegetarienne vegane
    vegan vegetalien vegetalienne diabetique coeliaque enceinte allergique intolerant
    intolerante dyslexique autiste asthmatique epileptique"""
)
_NATIONALITIES = _set(
    """french british english scottish welsh irish american canadian german spanish
    italian portuguese belgian swiss dutch polish brazilian mexican japanese chinese
    indian moroccan algerian tunisian
    francais francaise britannique anglais anglaise americain americaine canadien
    canadienne allemand allemande espagnol espagnole italien italienne portugais
    portugaise belge suisse neerlandais polonais polonaise bresilien bresilienne mexicain
    japonais japonaise chinois chinoise indien indienne marocain marocaine algerien
    algerienne tunisien tunisienne"""
)

# --- what a sentence must not be -------------------------------------------------------------

_QUESTION_OPENERS = _set(
    """what where when why how who whom whose which do does did is are was were can could
    would should will shall have has had may might am isn aren don doesn didn won wouldn
    couldn shouldn
    que quoi qu quel quelle quels quelles ou comment pourquoi quand combien qui est-ce
    lequel laquelle peux pourrais sais as es veux voudrais connais"""
)
# Words that make a sentence a hypothesis, a wish, a doubt or a report of someone else.
_HYPOTHETICAL = re.compile(
    r"\b(if|whether|suppose|supposing|imagine|pretend|hypothetically|let's say|what if|"
    r"would|wish|wonder|wondering|maybe|perhaps|might|probably|guess|think|thought|"
    r"assume|dream|dreamt|dreamed|unless|in case|as if|"
    r"si|s'il|supposons|imaginons|admettons|imagine|peut-etre|probablement|pense|crois|"
    r"suppose|reve|revais|songe|comme si|au cas ou)\b"
)
# A conditional first-person verb in French: "je serais", "j'aimerais", "je voudrais".
_FR_CONDITIONAL = re.compile(r"\b(je|j')\s*\w+(?:rais|rions)\b")
_EN_CONDITIONAL = re.compile(r"\b(i'd|we'd|i would|we would)\b")
# Addressed to the assistant, or about the conversation: "you", "tu", "vous", "ton"...
_SECOND_PERSON = re.compile(
    r"\b(you|your|yours|yourself|u|ya|tu|te|t'|toi|ton|ta|tes|vous|votre|vos)\b|"
    r"(?:^|\s)t'|-tu\b|-vous\b"
)
_REQUEST = re.compile(
    r"\b(please|pls|plz|can i|could i|may i|let's|lets|let me|help me|remind me|"
    r"i need|i want (?!to)|i'd like|i would like|i'm looking for|looking for|"
    r"s'il te plait|s'il vous plait|stp|svp|merci de|aide-moi|aidez-moi|j'ai besoin|"
    r"je veux (?!devenir|apprendre|courir|demenager|arreter|commencer|visiter|voyager)|"
    r"je voudrais|je cherche|rappelle-moi|dis-moi|donne-moi)\b|"
    r"\b\w+-(?:le|la|les|moi|nous|lui|leur)\b"
)
_IMPERATIVES = _set(
    """write tell give help make show explain translate summarise summarize list find
    create draft generate suggest recommend remind check fix describe compare rewrite
    correct plan book send calculate compute convert add remove delete search look
    read name say teach answer
    ecris ecrivez donne donnez dis dites aide aidez fais faites montre montrez explique
    expliquez traduis traduisez resume resumez liste listez trouve trouvez cree creez
    redige redigez propose proposez suggere suggerez recommande recommandez rappelle
    verifie corrige decris compare reecris calcule convertis ajoute supprime cherche
    regarde lis reponds"""
)
# Chat scaffolding, the assistant's voice and memories being restated.
_NOT_THE_USER = re.compile(
    r"(?<!')\b(assistant|ai|chatbot|language model|claude|ikario|chatgpt|as i said|as i told|"
    r"like i said|i told|i already|i mentioned|remember|recall|noted|i've noted|"
    r"i remember|memory|memories|here is|here's|happy to help|glad to help|certainly|"
    r"comme je (?:l'ai|disais)|je l'ai deja|deja dit|souviens|rappelle-toi|rappel|"
    r"memoire|souvenir|souvenirs|voici|avec plaisir|bien sur|note que)\b"
)
_PAST_ONLY = re.compile(r"\b(yesterday|last night|this morning|hier|ce matin|avant-hier)\b")
_PRONOUN_OBJECT = _set("it that this those these them ca cela ceci ce")

# --- when a passing state ends ----------------------------------------------------------------

_WEEKDAYS = {
    **dict.fromkeys(("monday", "lundi"), 0),
    **dict.fromkeys(("tuesday", "mardi"), 1),
    **dict.fromkeys(("wednesday", "mercredi"), 2),
    **dict.fromkeys(("thursday", "jeudi"), 3),
    **dict.fromkeys(("friday", "vendredi"), 4),
    **dict.fromkeys(("saturday", "samedi"), 5),
    **dict.fromkeys(("sunday", "dimanche"), 6),
}
_MONTHS = {
    name: n
    for n, names in enumerate(
        [
            ("january", "janvier"),
            ("february", "fevrier"),
            ("march", "mars"),
            ("april", "avril"),
            ("may", "mai"),
            ("june", "juin"),
            ("july", "juillet"),
            ("august", "aout"),
            ("september", "septembre"),
            ("october", "octobre"),
            ("november", "novembre"),
            ("december", "decembre"),
        ],
        start=1,
    )
    for name in names
}
_COUNTS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "un": 1,
    "une": 1,
    "two": 2,
    "deux": 2,
    "three": 3,
    "trois": 3,
    "four": 4,
    "quatre": 4,
    "five": 5,
    "cinq": 5,
    "six": 6,
    "ten": 10,
    "dix": 10,
    "few": 3,
    "quelques": 3,
    "couple": 2,
}
_UNIT_DAYS = {
    "day": 1,
    "days": 1,
    "jour": 1,
    "jours": 1,
    "night": 1,
    "nights": 1,
    "nuit": 1,
    "nuits": 1,
    "week": 7,
    "weeks": 7,
    "semaine": 7,
    "semaines": 7,
    "month": 30,
    "months": 30,
    "mois": 30,
}
_WEEKDAY = "|".join(_WEEKDAYS)
_MONTH = "|".join(_MONTHS)
_UNTIL = r"(?:until|till|til|through|jusqu'a|jusqu'au|jusqu'aux|jusque)"


def _days_to_weekday(today: date, weekday: int) -> int:
    ahead = (weekday - today.weekday()) % 7
    return ahead or 7


def _month_end(today: date) -> date:
    first_next = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
    return first_next - timedelta(days=1)


def expiry_days(folded: str, today: date) -> int | None:
    """Days until the end a sentence names for a state ("until Friday": to Friday's end),
    or None when it names none."""
    if re.search(r"\b(today|tonight|aujourd'hui|ce soir|cette nuit)\b", folded):
        return 1
    if re.search(r"\b(tomorrow|demain)\b", folded):
        return 2
    match = re.search(rf"\b{_UNTIL}\s+(?:(?:next|this|le|ce)\s+)?({_WEEKDAY})\b", folded)
    if match:
        return _days_to_weekday(today, _WEEKDAYS[match.group(1)]) + 1
    match = re.search(
        rf"\b{_UNTIL}\s+(?:the\s+|le\s+)?(\d{{1,2}})(?:st|nd|rd|th|er)?\s+(?:of\s+)?({_MONTH})\b"
        rf"|\b{_UNTIL}\s+({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b",
        folded,
    )
    if match:
        day, month = (
            (match.group(1), match.group(2)) if match.group(1) else (match.group(4), match.group(3))
        )
        try:
            end = date(today.year, _MONTHS[month], int(day))
        except ValueError:
            return None
        if end < today:
            end = end.replace(year=today.year + 1)
        return (end - today).days + 1
    if re.search(rf"\b{_UNTIL}\s+(?:the end of the month|la fin du mois)\b", folded) or re.search(
        r"\b(this month|ce mois-ci|ce mois)\b", folded
    ):
        return (_month_end(today) - today).days + 1
    if re.search(r"\b(this weekend|ce week-end|ce weekend)\b", folded):
        return _days_to_weekday(today, 0)
    if re.search(r"\b(this week|all week|cette semaine|toute la semaine)\b", folded):
        return 7 - today.weekday()
    if re.search(r"\b(next week|la semaine prochaine)\b", folded):
        return 14 - today.weekday()
    if not re.search(r"\b(been|depuis|since)\b", folded):
        match = re.search(
            r"\b(?:for|pendant|pour)\s+(?:the\s+next\s+|les\s+)?(\d{1,3}|an?|one|two|three|four|"
            r"five|six|ten|few|couple of|un|une|deux|trois|quatre|cinq|six|dix|quelques)\s+"
            r"(?:more\s+)?(days?|nights?|weeks?|months?|jours?|nuits?|semaines?|mois)\b",
            folded,
        )
        if match:
            count = match.group(1).split()[0]
            number = int(count) if count.isdigit() else _COUNTS.get(count, 1)
            return max(1, min(number * _UNIT_DAYS[match.group(2)], 365))
    return None


# --- reading a sentence -----------------------------------------------------------------------

_SPEAKER_LINE = re.compile(r"^\s*(assistant|ikario|claude|ai|bot)\s*:", re.IGNORECASE)
_USER_PREFIX = re.compile(r"^\s*(user|me|moi|utilisateur)\s*:\s*", re.IGNORECASE)
_TAGGED_BLOCK = re.compile(
    r"<([a-z_][\w-]{0,40})[^>]{0,200}>.*?</\1\s*>", re.IGNORECASE | re.DOTALL
)
# Code and quoted blocks are someone else's words ("my_list = ...", a pasted email).
_CODE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_QUOTED = re.compile(r"^[ \t]*>[^\n]*", re.MULTILINE)
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_FILLER = re.compile(
    r"^(?:(?:oh|ah|well|so|and|but|also|anyway|btw|by the way|fyi|actually|honestly|"
    r"heads up|just so you know|for your information|for the record|quick one|"
    r"pour info|pour ton info|pour information|je te previens|petite precision|"
    r"ok|okay|yeah|yes|no|hi|hello|hey|oui|non|bon|alors|bref|au fait|d'ailleurs|sinon|"
    r"en fait|du coup|salut|bonjour|coucou|et|mais|aussi|enfin|ps|p\.s\.|haha|lol)\b[\s,:;-]*)+",
    re.IGNORECASE,
)
# Where a statement's own part ends and a request or comment begins.
_TAIL = re.compile(
    r"\s*(?:,|;|\s-|\s—|\s–)\s*(?:so|hence|any|alors|des)\b.*$"
    r"|\s+(?:which is why|that's why|donc|du coup|c'est pour [cç]a|c'est pourquoi|"
    r"so (?:no|please|keep|don't|can|could|any))\b.*$"
    r"|\s*[,;:(].*?\b(?:please|lol|haha|stp|svp)\b.*$",
    re.IGNORECASE,
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _clean(text: str) -> str:
    text = _CONTROL.sub(" ", text)
    text = strip_private(text)
    text = _TAGGED_BLOCK.sub(" ", text)
    text = _QUOTED.sub(" ", _CODE.sub(" ", text))
    return text.replace("\u2019", "'").replace("\u2018", "'")


# A speaker's label inside a line: a stored transcript is one line ("User: … Assistant: …").
_INLINE_SPEAKER = re.compile(r"\s+(?=(?:User|Assistant|Ikario|Claude|Utilisateur)\s*:\s)")


def _user_lines(text: str) -> list[str]:
    """The lines the user wrote: a transcript's assistant lines (and what follows them until
    the next user line) are skipped."""
    lines, theirs = [], True
    for line in _INLINE_SPEAKER.sub("\n", text).splitlines():
        if _SPEAKER_LINE.match(line):
            theirs = False
            continue
        if _USER_PREFIX.match(line):
            theirs = True
            line = _USER_PREFIX.sub("", line)
        if theirs:
            lines.append(line)
    return lines


def _sentences(text: str) -> list[str]:
    out = []
    for line in _user_lines(text):
        out.extend(s.strip() for s in _SENTENCE.findall(line) if s.strip())
    return out


# A time said before the user: "In April I'm running...", "Le 8 avril je pars...".
_LEADING_TIME = re.compile(
    r"^(?P<when>(?:in|on|this|next|every|en|le|la|ce|cette|chaque|depuis|since)\s+"
    r"[^,;]{1,30}?),?\s+(?=(?:i|i'm|i've|we|we're|we've|je|j'|on|nous)\b)",
    re.IGNORECASE,
)


def _time_last(sentence: str) -> str:
    """A sentence whose leading time phrase is said last, so that it opens with the user."""
    found = _LEADING_TIME.match(sentence)
    if not found or "?" in found.group("when"):
        return sentence
    rest = sentence[found.end() :]
    ending = re.search(r"[\s.!?…]*$", rest)
    when = found.group("when")
    return f"{rest[: ending.start()]} {when[:1].lower()}{when[1:]}{rest[ending.start() :]}"


def _statement_part(sentence: str) -> str | None:
    """The declarative part of a sentence, or None: a question gives only a first-person
    clause it opens with ("I'm in Lyon until Friday, any restaurant ideas?")."""
    sentence = _FILLER.sub("", sentence).strip()
    if sentence.endswith("?"):
        head = re.split(r"[,;]|\s[-—–]\s|\s+(?:so|donc|alors)\s+", sentence, maxsplit=1)
        if len(head) < 2:
            return None
        sentence = head[0].strip()
    sentence = _time_last(sentence)
    sentence = _TAIL.sub("", sentence).strip()
    sentence = re.sub(r"[\s.!…:;,-]+$", "", sentence)
    if not sentence or len(sentence) > MAX_SENTENCE:
        return None
    return sentence


_ELISION = re.compile(r"\b(l|d|j|m|n|s|t|qu|c)'(?=[a-z])")


def _words(folded: str) -> list[str]:
    """Folded words; a French elision is a word of its own ("j'ai": "j'", "ai")."""
    return re.findall(r"[a-z0-9]+(?:[-'][a-z0-9]+)*'?", _ELISION.sub(r"\1' ", folded))


# People around the user whose news is theirs, not the user's ("my neighbour bought a
# Porsche"); family and partners are part of the user's life and stay.
_ACQUAINTANCES = _set(
    """neighbour neighbor neighbours neighbors colleague colleagues coworker co-worker boss
    voisin voisine voisins collegue collegues patron patronne chef"""
)
# Someone else's words reported: "my colleague says that...", "ma sœur dit que...".
_REPORTED = re.compile(
    r"\b(says|said|tells me|told me|thinks|reckons|claims|dit|disait|raconte|pretend|"
    r"trouve|m'a dit)\s+(that|que|qu')"
)


def _refused(folded: str, words: list[str]) -> bool:
    if not words or words[0] in _QUESTION_OPENERS or words[0] in _IMPERATIVES:
        return True
    if words[0] in ("my", "our", "mon", "ma", "mes", "notre", "nos") and (
        set(words[1:3]) & _ACQUAINTANCES
    ):
        return True
    if _REPORTED.search(folded):
        return True
    # French inversion and "est-ce que" are questions even without their mark.
    if re.search(r"\best-ce\b|-(tu|vous|il|elle|on)\b", folded):
        return True
    return bool(
        _HYPOTHETICAL.search(folded)
        or _FR_CONDITIONAL.search(folded)
        or _EN_CONDITIONAL.search(folded)
        or _SECOND_PERSON.search(folded)
        or _REQUEST.search(folded)
        or _NOT_THE_USER.search(folded)
    )


# --- rewriting the user's words in the third person -------------------------------------------

_EN_IRREGULAR = {
    "am": "is",
    "'m": "is",
    "have": "has",
    "'ve": "has",
    "do": "does",
    "go": "goes",
    "was": "was",
    "can": "can",
    "can't": "can't",
    "cannot": "cannot",
    "will": "will",
    "'ll": "will",
    "don't": "doesn't",
    "do not": "does not",
    "must": "must",
    "won't": "won't",
    "didn't": "didn't",
    "haven't": "hasn't",
    "never": "never",
}
_EN_ADVERBS = _set(
    "really also just recently still never always usually often actually absolutely totally "
    "currently now finally sometimes mostly only even literally"
)
# Verbs that open a fact after "I" (base form), and past forms that may (a life event).
_EN_VERBS = _set(
    """live work love like enjoy hate dislike prefer adore eat drink speak teach study play
    run swim cycle ride drive own practise practice train support follow collect cook bake
    volunteer coach manage grow keep avoid go plan intend fly leave move start commute
    belong come write read paint sing knit climb hike dance sail surf ski skate garden
    fish sew draw attend take care need want stay wear use am have 've 'm do don't can't
    cannot will 'll won't haven't hold raise foster breed"""
)
_EN_PAST = _set(
    """was broke got had moved started quit stopped bought adopted married graduated
    finished retired lost won switched joined became sprained hurt injured passed sold
    gave began divorced separated changed left took signed completed opened launched
    grew lived worked studied went"""
)
_FR_SUBJECT_VERB = {
    "suis": "est",
    "ai": "a",
    "vais": "va",
    "fais": "fait",
    "peux": "peut",
    "veux": "veut",
    "dois": "doit",
    "vis": "vit",
    "prends": "prend",
    "apprends": "apprend",
    "comprends": "comprend",
    "viens": "vient",
    "reviens": "revient",
    "tiens": "tient",
    "connais": "connaît",
    "sais": "sait",
    "bois": "boit",
    "cours": "court",
    "dors": "dort",
    "pars": "part",
    "sors": "sort",
    "lis": "lit",
    "écris": "écrit",
    "conduis": "conduit",
    "finis": "finit",
    "choisis": "choisit",
    "mets": "met",
    "élève": "élève",
    "soutiens": "soutient",
}
_FR_VERBS = _set(
    """habite vis travaille aime adore deteste prefere mange bois parle enseigne etudie joue
    cours nage fais pratique conduis possede apprends prepare compte pars demenage vais
    commence arrete suis ai cuisine jardine collectionne soutiens lis ecris fume eleve dirige
    gere code garde suis ne n' m' me supporte evite passe reste fete organise monte peins
    chante tricote grimpe randonne danse skie surfe vote milite benevole accompagne garde
    porte utilise prends dessine"""
)
_FR_PAST_PARTICIPLES = _set(
    """commence arrete adopte achete perdu trouve eu obtenu change quitte rejoint vendu
    fini termine decroche signe casse opere pris demenage divorce epouse gagne remplace"""
)
# Where the sentence opens with the user (the one subject this module rewrites).
_EN_OPEN = re.compile(r"^(i|i'm|i've|i'll|we|we're|we've|we'll|my|our)\b", re.IGNORECASE)
_FR_OPEN = re.compile(r"^(je|j'|mon|ma|mes|nous|on|notre|nos)(?=\b|\w)", re.IGNORECASE)


# Verbs whose base form ends in "ing" ("I sing" is not "I'm singing").
_ING_VERBS = _set("sing bring ring swing sting cling fling wring string spring")


def _en_third(verb: str) -> str:
    low = verb.lower()
    if low in _EN_IRREGULAR:
        return _EN_IRREGULAR[low]
    if low in _EN_PAST or low.endswith("ed") or (low.endswith("ing") and low not in _ING_VERBS):
        return verb
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _fr_third(verb: str) -> str | None:
    low = verb.lower()
    if low in _FR_SUBJECT_VERB:
        return _FR_SUBJECT_VERB[low]
    if low.endswith("e"):
        return verb
    if low.endswith("ds"):
        return verb[:-1]
    if low.endswith("is") or low.endswith("s"):
        return verb[:-1] + "t"
    if low.endswith("x"):
        return verb[:-1] + "t"
    return None


_EN_LATER = [
    (r"\bI'm\b", "they're"),
    (r"\bI am\b", "they are"),
    (r"\bI've\b", "they've"),
    (r"\bI'll\b", "they'll"),
    (r"\bI was\b", "they were"),
    (r"\bI\b", "they"),
    (r"\bmyself\b", "themselves"),
    (r"\bmine\b", "theirs"),
    (r"\bmy\b", "their"),
    (r"\bme\b", "them"),
    (r"\bwe're\b", "they're"),
    (r"\bwe\b", "they"),
    (r"\bour\b", "their"),
    (r"\bus\b", "them"),
]
_FR_LATER = [
    (r"\bj'", "il "),
    (r"\bje\b", "il"),
    (r"\bmoi-même\b", "lui-même"),
    (r"\bmoi\b", "lui"),
    (r"\bmon\b", "son"),
    (r"\bma\b", "sa"),
    (r"\bmes\b", "ses"),
    (r"\bm'", "s'"),
    (r"\bme\b", "se"),
    (r"\bnotre\b", "leur"),
    (r"\bnos\b", "leurs"),
]


def _later(rest: str, table: list[tuple[str, str]]) -> str:
    for pattern, replacement in table:
        rest = re.sub(pattern, replacement, rest, flags=re.IGNORECASE)
    return rest


def _rewrite_en(sentence: str) -> str | None:
    """ "I love horses" -> "The user loves horses"; "My sister Ana lives in Porto" ->
    "The user's sister Ana lives in Porto"."""
    match = re.match(r"^(?:my|our)\s+(\w+)\s+and\s+I\s+(.*)$", sentence, re.IGNORECASE)
    if match:  # "My partner and I are expecting" -> "The user and their partner are expecting"
        return f"The user and their {match.group(1)} " + _later(match.group(2), _EN_LATER)
    match = re.match(r"^(my|our)\s+(.*)$", sentence, re.IGNORECASE)
    if match:
        return "The user's " + _later(match.group(2), _EN_LATER)
    match = re.match(r"^(?:i|we)(?:'m|'re)\s+(.*)$", sentence, re.IGNORECASE)
    if match:
        return "The user is " + _later(match.group(1), _EN_LATER)
    match = re.match(r"^(?:i|we)'ve\s+(.*)$", sentence, re.IGNORECASE)
    if match:
        return "The user has " + _later(match.group(1), _EN_LATER)
    match = re.match(r"^(?:i|we)'ll\s+(.*)$", sentence, re.IGNORECASE)
    if match:
        return "The user will " + _later(match.group(1), _EN_LATER)
    match = re.match(r"^(?:i|we)\s+(.*)$", sentence, re.IGNORECASE)
    if not match:
        return None
    words = match.group(1).split(" ")
    adverbs = []
    while words and words[0].lower() in _EN_ADVERBS:
        adverbs.append(words.pop(0))
    if not words:
        return None
    verb = words.pop(0)
    if verb.lower() in ("do", "did") and words and words[0].lower() == "not":
        verb = verb + " " + words.pop(0)
    if verb.lower() in ("are", "were"):  # "we are", "we were"
        verb = "is" if verb.lower() == "are" else "was"
    third = _en_third(verb) if verb.lower() not in ("is", "was") else verb
    rest = _later(" ".join(words), _EN_LATER)
    return " ".join(["The user", *adverbs, third, rest]).strip()


_FR_VOWEL = re.compile(r"^[aeiouyhàâéèêëîïôûù]", re.IGNORECASE)


def _rewrite_fr(sentence: str) -> str | None:
    """ "Je suis infirmier" -> "L'utilisateur est infirmier"; "Ma fille Zoé a 7 ans" ->
    "La fille de l'utilisateur, Zoé, a 7 ans"."""
    match = re.match(
        r"^(mon|ma|mes|notre|nos)\s+((?:(?:vieux|vieille|vieil|petit|petite|petits|petites|grand|"
        r"grande|deux|trois)\s+)?[\w'-]+(?:\s+(?:aîné|aînée|cadet|cadette|préféré|préférée|"
        r"préférés|préférées))?)\s*,?\s*(.*)$",
        sentence,
        re.IGNORECASE,
    )
    if match:
        owner, noun, rest = match.groups()
        owner = owner.lower()
        if owner in ("mes", "nos"):
            article = "Les "
        elif _FR_VOWEL.match(noun):
            article = "L'"
        else:
            article = "Le " if owner in ("mon", "notre") else "La "
        name = re.match(r"^((?:[A-ZÀ-Ý][\w-]+)(?:\s+(?:et|and)\s+[A-ZÀ-Ý][\w-]+)?),?\s+(.*)$", rest)
        rest = _later(rest, _FR_LATER)
        if name:
            rest = name.group(1) + ", " + _later(name.group(2), _FR_LATER)
            return f"{article}{noun} de l'utilisateur, {rest}"
        return f"{article}{noun} de l'utilisateur {rest}".strip()
    match = re.match(r"^(?:je|j'|nous|on)\s*(.*)$", sentence, re.IGNORECASE)
    if not match:
        return None
    rest = match.group(1)
    lead = ""
    negation = re.match(r"^(ne\s+|n')(.*)$", rest, re.IGNORECASE)
    if negation:
        lead, rest = (
            ("ne " if negation.group(1).lower().startswith("ne") else "n'"),
            negation.group(2),
        )
    reflexive = re.match(r"^(me\s+|m')(.*)$", rest, re.IGNORECASE)
    if reflexive:
        lead += "se " if reflexive.group(1).lower().startswith("me") else "s'"
        rest = reflexive.group(2)
    parts = rest.split(" ", 1)
    verb, tail = parts[0], (parts[1] if len(parts) > 1 else "")
    lowered = sentence.lower()
    if lowered.startswith("nous"):
        plural = {"sommes": "est", "avons": "a", "allons": "va", "partons": "part"}
        third = plural.get(verb.lower())
        if third is None and verb.lower().endswith("ons"):
            third = verb[:-3] + "e"
    elif lowered.startswith("on"):
        third = verb
    else:
        third = _fr_third(verb)
    if third is None:
        return None
    if lead == "n'" and not _FR_VOWEL.match(third):
        lead = "ne "
    if lead.endswith("ne ") and _FR_VOWEL.match(third):
        lead = lead[:-3] + "n'"
    if lead.endswith("se ") and _FR_VOWEL.match(third):
        lead = lead[:-3] + "s'"
    return f"L'utilisateur {lead}{third} {_later(tail, _FR_LATER)}".strip()


# --- what a statement is about ----------------------------------------------------------------

_THEMES = (
    (
        "identity",
        _NATIONALITIES
        | _set(
            """name born age old nom prenom married engaged divorced single widowed retired
            unemployed chomage retraite retraitee marie mariee divorce divorcee celibataire
            fiance fiancee veuf veuve pacse pacsee"""
        ),
    ),
    ("family", _PEOPLE),
    ("health", _ILLNESS_PASSING | _CONDITIONS),
    (
        "diet",
        _set(
            """eat eats meat fish gluten lactose dairy sugar alcohol vegetarian vegan pescatarian
            diet drink coffee mange viande poisson sucre alcool vegetarien vegetarienne
            vegane vegetalien vegetalienne regime bois cafe"""
        ),
    ),
    (
        "work",
        _JOBS
        | _set(
            """work works job office company shift shifts nights career boss colleague
            study studies university degree travaille boulot travail bureau entreprise garde
            gardes poste metier etudie etudes fac universite"""
        ),
    ),
    (
        "plans",
        _set(
            """plan planning going fly flying leave leaving moving trip marathon wedding
            demenage demenageons part pars partons voyage marie"""
        ),
    ),
    (
        "likes",
        _set(
            """love like enjoy hate dislike prefer adore fan favourite favorite aime adore
            deteste prefere"""
        ),
    ),
    (
        "places",
        _set("live lives living based moved originally grew habite habitons vis vit originaire"),
    ),
    (
        "languages",
        _set(
            """speak speaks fluent bilingual native parle parlons couramment bilingue
            langues"""
        ),
    ),
    (
        "hobbies",
        _set(
            """play plays practise practice hobby joue jouons pratique yoga climbing
            running swimming cycling hiking knitting painting guitar piano cello violin
            orchestra choir chorale randonnee escalade natation"""
        ),
    ),
)


_WHO = re.compile(
    r"^(i'm called|i am called|je m'appelle|on m'appelle)\b|"
    r"^(i'm|i am|j'ai) \d+( years old| ans)?$|\b(was born|suis nee?)\b"
)


def _themes(words: list[str]) -> list[str]:
    found = {piece for word in words for piece in word.split("'") if piece}
    themes = [theme for theme, vocabulary in _THEMES if found & vocabulary]
    joined = " ".join(words).replace("' ", "'")
    if "identity" not in themes and _WHO.search(joined):
        themes.insert(0, "identity")
    if "places" not in themes and re.match(r"(i'm|i am|we're|we are) from\b", joined):
        themes.append("places")
    return themes


def _subjects(statement: str, words: list[str]) -> list[str]:
    """People, places and things a fact is about: relation words and names (lower case)."""
    out: list[str] = []
    for word in words:
        if word in _OWNABLE and word not in out:
            out.append(word)
    tokens = re.findall(r"[^\W\d_][\w-]*", statement)
    for pos, token in enumerate(tokens):
        if pos == 0 or not token[:1].isupper() or token in ("I", "L", "CHU"):
            continue
        name = fold(token)
        if name in _WEEKDAYS or name in _MONTHS or name in out or len(name) < 2:
            continue
        out.append(name)
    return out[:4]


def _kind(words: list[str], themes: list[str], passing: bool, text: str) -> str:
    found = set(words)
    if passing:
        return "fact"
    if re.match(r"^(i|i'm|i've|i'll|we|we're|we'll|je|j'|nous|on)\b", text) and (
        "plans" in themes
        or re.search(
            r"\b(going to|planning|plan to|training for|learning|saving for|preparing|"
            r"want to|vais|compte|prevois|prepare|apprends|apprend|veux)\b",
            text,
        )
    ):
        return "goal"
    if re.match(r"^(my|our|mon|ma|mes|notre|nos)\b", text):
        # About someone or something of theirs; their own name, job or birthday is who they are.
        if found & _FAVOURITE:
            return "preference"
        return "self" if words[1:2] and words[1] in _MY_SELF else "fact"
    if found & _CONDITIONS:  # a lasting condition is who they are, even about food
        return "self"
    if "likes" in themes or "diet" in themes or "hobbies" in themes:
        return "preference"
    if set(themes) & {"identity", "work", "places", "health", "languages"}:
        return "self"
    if "family" in themes and re.search(r"^(i have|i've got|j'ai|we have|nous avons)\b", text):
        return "self"
    return "fact"


_MY_SELF = _set("name birthday job work nom prenom anniversaire travail boulot metier")


# --- what makes a first-person sentence a fact ---------------------------------------------------


# Said between "my" and what is theirs: "my old bike", "my two sons".
_BEFORE_NOUN = _set("old new little big two three elder older younger eldest youngest")


def _en_fact(part: str, folded: str, words: list[str]) -> bool:
    first = words[0]
    if first in ("my", "our"):
        while len(words) > 2 and words[1] in _BEFORE_NOUN:
            words = [words[0], *words[2:]]
        if len(words) < 3:
            return False
        noun = words[1]
        if noun not in _OWNABLE | _MY_TOPICS | _FAVOURITE | _CONDITIONS | _LANGUAGES:
            return False
        return bool(
            re.search(
                r"\b(is|'s|was|are|has|have|lives|live|works|work|loves|love|likes|like|turns|"
                r"hates|plays|studies|goes|got|will|starts|start|runs|owns|teaches|just|moved|"
                r"called|named|can't|doesn't|don't|born|adores|enjoys|prefers|speaks|flare|"
                r"failed|broke|knocked|keeps|start|died|passed|[a-z]{3,}ed)\b",
                " ".join(words[2:6]),
            )
        )
    rest = words[1:]
    if first in ("i'm", "we're") or (first in ("i", "we") and rest[:1] in (["am"], ["are"])):
        after = rest if first in ("i'm", "we're") else rest[1:]
        return _en_being(after, part)
    if first in ("i've", "we've"):
        return bool(_after_have(rest))
    if first in ("i'll", "we'll"):
        if rest[:1] == ["be"]:
            return _en_being(rest[1:], part)
        return bool(set(rest[:1]) & _set("start move fly leave visit retire"))
    while rest and rest[0] in _EN_ADVERBS:
        rest = rest[1:]
    if not rest:
        return False
    verb = rest[0]
    objects = rest[1:]
    if verb == "got" and objects[:1] and objects[0] in _GOT_STATUS:
        return True  # "got engaged", "got a promotion" is not "got a question"
    if verb in ("have", "'ve", "got"):
        return _after_have(objects)
    if verb in ("need", "want"):
        return objects[:1] == ["to"] and bool(
            set(objects[1:3])
            & _set("learn become run move start quit visit travel lose buy build open retire")
        )
    if verb in ("don't", "can't", "cannot", "do", "never"):
        return bool(
            objects
            and objects[0] in _set("eat drink like stand smoke drive work live have speak")
            and len(objects) > 1
            and objects[1] not in _PRONOUN_OBJECT
        )
    if verb in ("like", "love", "enjoy", "hate", "dislike", "prefer", "adore"):
        return _liked(objects)
    if verb == "suffer":  # "I suffer from migraines"
        return objects[:1] == ["from"] and bool(
            set(objects[1:4]) & (_CONDITIONS | _ILLNESS_PASSING)
        )
    if verb == "speak":
        return bool(re.search(r"\bspeak\s+(?:\w+\s+)?[A-Z]", part) or "languages" in objects)
    if verb == "go":
        return bool(
            re.search(r"\b(every|each|twice|on (mondays|tuesdays|weekends)|regularly)\b", folded)
        )
    if verb in ("read", "write", "take", "use", "need", "stay", "come", "keep", "hold"):
        return bool(
            re.search(r"\b(every|each|daily|for a living|professionally|insulin)\b", folded)
        )
    if verb in ("was",):
        return bool(objects[:1] == ["born"])
    if verb in _EN_PAST:
        return _life_event(objects, part)
    if verb == "live":
        return bool(objects[:1]) and objects[0] in _LIVE_WHERE
    return verb in _EN_VERBS


_LIVE_WHERE = _set("in with near on at alone abroad by together close outside")
# What the conversation is having trouble with, not what the user has.
_TROUBLE = _set(
    """question questions problem problems issue issues idea ideas doubt doubts error bug
    souci soucis probleme problemes idee idees doute erreur"""
)


_GOT_STATUS = _set("married engaged divorced promoted hired fired pregnant")


# What a life event is about ("started a new job", "adopted a cat", "broke my wrist").
_LIFE = _OWNABLE | _set(
    """job work school university college degree diploma course business company
    married divorced pregnant smoking drinking sugar alcohol meat baby licence license
    retirement wrist arm leg ankle knee back hip shoulder foot hand finger toe nose rib
    travail boulot poste emploi ecole fac universite diplome permis entreprise bebe fumer
    boire alcool viande retraite poignet bras jambe cheville genou dos hanche epaule pied
    main doigt cote nez"""
)
# What a like is not about: the conversation's options and drafts, or a pronoun.
_NOT_LIKED = _PRONOUN_OBJECT | _set(
    """idea answer answers response option options version versions suggestion draft
    first second third last previous one ones when how what way your this that
    cette cet ces
    idee reponse reponses proposition premiere premier deuxieme derniere dernier ta ton tes
    quand comment"""
)


def _liked(objects: list[str]) -> bool:
    if objects[:1] == ["to"] and set(objects[1:2]) & _set("ask say bother admit interrupt tell"):
        return False  # "I hate to ask": manners, not a taste
    return bool(objects) and not set(objects[:4]) & _NOT_LIKED and objects[0] != "bien"


def _life_event(objects: list[str], part: str) -> bool:
    """ "moved to Lyon", "started a new job", "quit smoking", "broke my wrist", "adopted a
    greyhound called Rocket", "left London for Brighton"."""
    if re.search(r"\b(?:to|in|from)\s+[A-Z]", part):
        return True
    if re.search(r"\b(?:called|named|qui s'appelle)\s+[A-ZÀ-Ý]", part):
        return True
    if re.search(  # "sold the Prius", "remplacé ma Clio": a thing they own, by its name
        r"\b(?:bought|sold|replaced|achet[ée]|vendu|remplac[ée])\s+(?:the|a|an|my|our|ma|mon|"
        r"notre|une|un|la|le)\s+(?:\w+\s+)?[A-ZÀ-Ý]",
        part,
    ):
        return True
    if re.search(r"\b(?:left|quitté)\s+[A-ZÀ-Ý][\w-]+\s+(?:for|pour)\s+[A-ZÀ-Ý]", part):
        return True
    return bool(set(objects[:4]) & _LIFE)


def _after_have(objects: list[str]) -> bool:
    """ "I have two kids", "I have diabetes", "I've got a cold" (not "I have a question")."""
    if not objects or set(objects[:5]) & _TROUBLE:
        return False
    head = objects[:4]
    if set(head) & (_CONDITIONS | _ILLNESS_PASSING):
        return True
    if objects[0] == "got":
        objects = objects[1:]
    while objects and objects[0] in _set("just finally recently now fully officially also"):
        objects = objects[1:]  # "we've just moved to Bristol"
    if not objects:
        return False
    if objects[0] in ("gone", "become", "turned") and objects[1:3]:  # "I've gone fully vegan"
        return bool(set(objects[1:3]) & (_DIETS | _STATUS | _JOBS))
    if objects[0] == "relocated":
        return objects[1:2] == ["to"]
    if objects[0] == "been":
        return bool(
            set(objects[1:3])
            & (_DIETS | _STATUS | _JOBS | _set("married living working learning training a an"))
        )
    if objects[0] in ("lived", "worked", "studied", "moved", "started", "quit", "stopped"):
        return True
    counted = objects[0] in _COUNTS or objects[0].isdigit() or objects[0] in ("no", "the")
    if counted and set(objects[1:5]) & _set("named called"):  # "a golden retriever named Biscuit"
        return True
    return counted and bool(set(objects[1:4]) & (_OWNABLE | _set("kids children grandchildren")))


def _en_being(after: list[str], part: str) -> bool:
    while after and after[0] in ("currently", "still", "now", "also", "finally", "officially"):
        after = after[1:]
    if not after or after[0] in ("not", "so", "very", "just", "really", "sure", "sorry"):
        return False
    if after[0] == "half" and after[1:2] and after[1] in _NATIONALITIES:
        return True
    if after[0] in ("stuck", "home", "laid", "down", "bedridden") and set(after[:6]) & (
        _ILLNESS_PASSING | _set("covid flu cold")
    ):
        return True
    if after[0] in ("a", "an", "the"):
        return bool(
            set(after[1:5]) & (_JOBS | _STATUS | _PEOPLE | _set("fan mother father mum dad"))
        )
    if after[0].isdigit():
        return True
    if after[0] in _STATUS or after[0] in _NATIONALITIES or after[0] in _JOBS:
        return True
    if set(after[:2]) & (_STATUS | _CONDITIONS | _DIETS):  # "gluten intolerant", "type 1 diabetic"
        return True
    if after[0] in _ILLNESS_PASSING or (after[0] == "down" and "with" in after[:2]):
        return True
    if (
        after[0] in ("from", "originally", "based", "married", "allergic", "off", "on")
        and len(after) > 1
    ):
        return after[0] != "on" or after[1] in (
            *("holiday", "vacation", "leave", "call", "nights", "sick", "maternity"),
            *("paternity", "parental", "medical"),
        )
    if after[0] in ("in", "at") and len(after) > 1:
        # A place with a capital: "I'm in Lyon until Friday" (read on the original casing).
        return bool(re.search(r"\b(?:in|at)\s+(?:the\s+)?[A-Z]", part))
    if after[:2] == ["going", "to"]:  # "going to move", "going to Peru"
        return _plan_verb(after[2:3]) or bool(re.search(r"\bgoing to (?:the )?[A-Z]", part))
    if after[0] in _ONGOING:
        allowed = _ONGOING[after[0]]
        return allowed is None or bool(set(after[1:4]) & allowed)
    return False


# What "I'm <verb>ing" says of a life (None: whatever follows); not "I'm working on a slide".
_ONGOING = {
    **dict.fromkeys(
        _set(
            """learning training preparing planning moving flying expecting saving visiting
            recovering raising teaching"""
        ),
        None,
    ),
    "working": _set("as at for nights night shifts from remotely freelance part-time full-time"),
    "studying": _set("for at in law medicine nursing engineering"),
    "writing": _set("book novel thesis dissertation memoir phd"),
    "running": _set("marathon half-marathon business company shop bakery restaurant"),
    "building": _set("house home"),
    "renovating": _set("house home flat kitchen bathroom"),
    "starting": _set("new job school university"),
    "leaving": _set("for tomorrow friday monday next"),
    "going": _set("vegan vegetarian back"),
    "staying": _set("with at in"),
    "seeing": _set("someone somebody"),
    "dating": None,
    "taking": _set("lessons classes course courses"),
    "travelling": _set("to through around"),
    "traveling": _set("to through around"),
}


def _plan_verb(words: list[str]) -> bool:
    return bool(
        set(words)
        & _set("run move start quit visit travel fly marry buy build open retire study learn be")
    )


def _fr_fact(part: str, folded: str, words: list[str]) -> bool:
    first = words[0]
    if first in ("mon", "ma", "mes", "notre", "nos"):
        while len(words) > 2 and words[1] in _FR_BEFORE_NOUN:
            words = [words[0], *words[2:]]
        if len(words) < 3:
            return False
        noun = words[1]
        if noun not in _OWNABLE | _MY_TOPICS | _CONDITIONS | _LANGUAGES:
            return False
        return bool(
            re.search(
                r"\b(est|a|ont|sont|appelle|appellent|habite|habitent|vit|vivent|travaille|"
                r"travaillent|adore|adorent|aime|aiment|fete|aura|va|part|fait|joue|etudie|"
                r"commence|vient|deteste|prefere|parle|mange|ne|n'|court|font|se|repete|"
                r"crevé|creve|tombe|mort|morte)\b",
                " ".join(words[2:7]),
            )
        )
    rest = words[1:]
    if not rest:
        return False
    if rest[0] in ("ne", "n'"):
        verb_words = rest[1:]
        return bool(
            verb_words
            and verb_words[0] in _set("mange bois supporte aime fume conduis peux")
            and len(verb_words) > 2
            and not set(verb_words[1:3]) & _PRONOUN_OBJECT
        )
    settled = rest[0] in ("s'", "m'", "me", "nous") and rest[1:2] in (["est"], ["suis"], ["sommes"])
    if settled and rest[2:3] and rest[2].startswith("install"):  # "on s'est installés à Nantes"
        return _has_place_fr(part)
    while len(rest) > 2 and rest[1] in _FR_ADVERBS and rest[0] in ("ai", "a", "avons"):
        rest = [rest[0], *rest[2:]]  # "on a enfin acheté une maison"
    verb, objects = rest[0], rest[1:]
    if verb in ("suis", "sommes", "est") or (first == "on" and verb == "est"):
        return _fr_being(objects, part)
    if verb in ("ai", "avons", "a"):
        if set(objects[:5]) & _TROUBLE:
            return False
        if objects[:1] and objects[0].isdigit() and objects[1:2] == ["ans"]:
            return True
        if set(objects[:4]) & (_CONDITIONS | _ILLNESS_PASSING | _set("rhume grippe mal")):
            return True
        if objects[:1] and objects[0] in _set("demenage emmenage"):  # "on a déménagé à Bordeaux"
            return _has_place_fr(part)
        if objects[:1] and objects[0] in _FR_PAST_PARTICIPLES:
            return _life_event(objects[1:], part)
        counted = objects[:1] and (objects[0] in _COUNTS or objects[0].isdigit())
        return bool(counted and set(objects[1:4]) & _OWNABLE)
    if verb in ("veux", "voudrais"):
        return bool(
            set(objects[:1]) & _set("devenir apprendre courir demenager arreter commencer visiter")
        )
    if verb in ("aime", "adore", "deteste", "prefere", "aimons", "adorons"):
        return _liked(objects)
    if verb in ("vais", "va", "allons"):
        if objects[:1] and objects[0] in ("a", "au", "aux", "en"):
            return _has_place_fr(part)
        return bool(_set("courir demenager partir commencer me epouser") & set(objects[:1]))
    if verb in ("parle", "parlons"):
        return bool(
            re.search(r"\b(?:parle|parlons)\s+(?:\w+\s+)?(?:l'|le\s+)?[A-ZÀ-Ý]", part)
        ) or bool(set(objects[:3]) & _FR_LANGUAGES)
    if verb in ("m'appelle", "appelle"):
        return True
    if verb in ("me", "m'"):
        tail = objects
        return bool(set(tail[:2]) & _set("appelle marie suis entraine prepare"))
    if verb in ("fais", "faisons"):
        return bool(objects[:1] and objects[0] in ("du", "de", "des", "de la"))
    if first in ("on", "nous"):
        # "on part à Lisbonne", "nous habitons à Rennes": a few verbs of where they live or go.
        if verb in ("part", "partons", "demenage", "demenageons"):
            return _has_place_fr(part) or verb.startswith("demenag")
        return verb in ("habite", "habitons", "vit", "vivons")
    if verb in ("pars", "reste", "passe"):
        return _has_place_fr(part)
    if verb == "roule":  # "je roule en Clio": the car they drive
        return bool(re.search(r"\broule\s+en\s+[A-ZÀ-Ý]", part))
    if verb == "travaille":
        return bool(objects[:1]) and objects[0] not in ("sur", "dessus", "la-dessus")
    return verb in _FR_VERBS


# Languages a user may say theirs is good or rusty ("my Arabic is fluent", "mon anglais").
_LANGUAGES = _set(
    """english french spanish german italian portuguese arabic chinese mandarin cantonese
    japanese russian dutch polish greek turkish hindi urdu wolof swahili korean hebrew
    anglais allemand espagnol italien portugais arabe chinois japonais russe"""
)
# Said between "mon" and what is theirs: "mon vieux vélo", "mes deux fils".
_FR_BEFORE_NOUN = _set("vieux vieille vieil petit petite petits petites grand grande deux trois")
_FR_ADVERBS = _set("enfin deja finalement recemment aussi encore officiellement")
_FR_LANGUAGES = _set(
    """francais anglais allemand espagnol italien portugais arabe chinois japonais russe
    breton occitan basque catalan neerlandais polonais langues"""
)


def _fr_being(objects: list[str], part: str) -> bool:
    while objects[:1] and objects[0] in ("maintenant", "desormais", "enfin"):
        objects = objects[1:]  # "je suis maintenant développeuse"
    if objects[:1] and objects[0] in ("devenu", "devenue", "passe", "passee") and objects[1:]:
        objects = objects[1:]  # "je suis devenue boulangère", "je suis passée végane"
    if not objects or objects[0] in ("pas", "tellement", "tres", "si", "vraiment", "sur", "sure"):
        return False
    if objects[:2] == ["en", "train"]:
        return False
    if objects[0] in ("un", "une") and len(objects) > 1:
        return bool(set(objects[1:4]) & (_JOBS | _STATUS | _PEOPLE | _set("fan mere pere")))
    head = objects[0]
    if head in _JOBS or head in _STATUS or head in _NATIONALITIES or head in _ILLNESS_PASSING:
        return True
    if objects[:2] == ["au", "chomage"]:
        return True
    if head == "avec":  # "je suis avec Bastien depuis septembre": their partner, by name
        return bool(re.search(r"\bavec\s+[A-ZÀ-Ý]", part))
    if head in ("ne", "nee", "originaire", "fan", "en", "au", "aux", "a", "de", "d'"):
        if head == "en":
            return bool(
                objects[1:2]
                and objects[1]
                in _set("vacances conge deplacement arret train teletravail couple voyage")
            ) or _has_place_fr(part)
        if head in ("a", "au", "aux", "de", "d'"):
            return _has_place_fr(part)
        return True
    return False


def _has_place_fr(sentence: str) -> bool:
    return bool(re.search(r"\b(?:à|a|au|aux|en|de|d')\s*[A-ZÀ-Ý]", sentence[3:]))


# --- the entry ----------------------------------------------------------------------------------


def _language_of(sentence: str) -> str | None:
    if _EN_OPEN.match(sentence):
        return "en"
    if _FR_OPEN.match(sentence):
        return "fr"
    return None


def _polish(content: str) -> str:
    content = re.sub(r"\s+", " ", content).strip(" ,;:-")
    content = re.sub(r"\s+([,.])", r"\1", content)
    content = re.sub(r"[!?.…]+$", "", content)
    return content[:1].upper() + content[1:] + "."


# A change said old value first, said new value first: what holds now leads the fact.
_OLD_THEN_NEW = (
    (
        re.compile(r"^The user sold (?P<old>.+?) and bought (?P<new>.+)$"),
        "The user bought {new}, having sold {old}",
    ),
    (
        re.compile(r"^The user (?:has )?left (?P<old>[A-Z][\w-]+) for (?P<new>[A-Z].*)$"),
        "The user moved to {new}, leaving {old}",
    ),
    (
        re.compile(
            r"^L'utilisateur a (?:\w+ )?remplacé (?P<old>(?:sa|son|ses|leur) .+?) "
            r"par (?P<new>(?:une?|des) .+)$"
        ),
        "L'utilisateur a maintenant {new}, à la place de {old}",
    ),
    (
        re.compile(r"^L'utilisateur a (?:\w+ )?quitté (?P<old>.+?) pour (?P<new>[A-ZÀ-Ý].*)$"),
        "L'utilisateur a rejoint {new}, après avoir quitté {old}",
    ),
)


def _new_value_first(content: str) -> str:
    for pattern, said_as in _OLD_THEN_NEW:
        found = pattern.match(content.rstrip("."))
        if found:
            return said_as.format(**found.groupdict())
    return content


_TOGETHER = re.compile(r"^(?P<name>[A-Z][a-z]+(?:-[A-Z][a-z]+)?) and I\s+")
_PRESENT_AT = {
    "en": re.compile(r"^(i'm|i am|we're|we are) (?:currently |still |now )?(in|at) "),
    "fr": re.compile(r"^(je suis|on est|nous sommes) (a|au|aux|en|chez) "),
}


def _fact_of(sentence: str, today: date, language: str | None) -> dict | None:
    part = _statement_part(sentence)
    if part is None:
        return None
    together = _TOGETHER.match(part)  # "Priya and I got married": the user did, with Priya
    if together and fold(together["name"]) not in _NOT_NAMES:
        part = "I " + part[together.end() :]
    dropped = _language_of(part) is None and not _CLAUSE_START.search(part)
    if dropped and fold(part.split(" ", 1)[0]) in _EN_PAST - {"was", "had"}:
        part = f"I {part[:1].lower()}{part[1:]}"  # the subject left out: "Moved to Leeds"
    lang = _language_of(part)
    if lang is None or (language and language != lang):
        return None
    folded = fold(part)
    words = _words(folded)
    if _refused(folded, words):
        return None
    if _PAST_ONLY.search(folded) and not set(words) & _ILLNESS_PASSING:
        return None  # what they did yesterday is not who they are
    ok = _en_fact(part, folded, words) if lang == "en" else _fr_fact(part, folded, words)
    if not ok:
        return None
    content = _rewrite_en(part) if lang == "en" else _rewrite_fr(part)
    if not content or len(content.split()) < 3:
        return None
    content = _new_value_first(content)
    if together:
        verb = re.match(r"^The user (is|has|was) ", content)
        plural = {"is": "are", "has": "have", "was": "were"}
        content = f"The user and {together['name']} " + (
            f"{plural[verb.group(1)]} {content[verb.end() :]}" if verb else content[9:]
        )
    days = expiry_days(folded, today)
    ill = bool(set(words) & _ILLNESS_PASSING)
    away = bool(
        _PRESENT_AT[lang].match(folded)
        or re.search(
            r"\b(on holiday|on vacation|on leave|off work|staying|visiting|away|en vacances|"
            r"en conge|en deplacement|en arret|en teletravail|working from home)\b",
            folded,
        )
    )
    # "I've been in Lyon since 2010" is where they live; "sick since Monday" still passes.
    lasting = bool(set(words) & (_CONDITIONS | _DIETS)) or (
        not ill and re.search(r"\b(been|depuis|since|always|toujours)\b", folded)
    )
    present_state = ill or away
    passing = days is not None or (present_state and not lasting)
    if passing and days is None:
        days = DEFAULT_STATE_DAYS
    themes = _themes(words)
    kind = _kind(words, themes, passing and present_state, folded)
    category = "fondatrice" if kind == "self" else "thematique"
    context: dict = {
        "category": "contextuelle" if passing else category,
        "kind": kind,
        "subjects": ([fold(together["name"])] if together else []) + _subjects(part, words),
        "tags": [TAG, *themes],
        "date": today.isoformat(),
    }
    if passing:
        context["ttl"] = f"{days}d"
    return {"content": _polish(content), "context": context, "language": lang}


_NAME = r"(?P<name>[A-ZÀ-Ý][a-zà-ÿ]+(?:-[A-ZÀ-Ý][a-zà-ÿ]+)?)"
# Who the user is, said as people introduce themselves ("I'm Tomás, 34", "Moi c'est Inès").
_PLACE = _NAME.replace("name", "place")
_INTRODUCTIONS = (
    ("en", "name", re.compile(rf"^{_NAME} here\b")),
    ("en", "name", re.compile(rf"\b(?i:i'm|i am|my name's|call me) {_NAME},")),
    ("en", "name", re.compile(rf"\b(?i:it's) {_NAME}, not [A-Z]")),
    ("en", "age", re.compile(r"\b(?i:i'm|i am),? (?P<age>\d{2})\b(?!\s*(?:%|h\b|km|kg|min))")),
    ("fr", "name", re.compile(rf"\b(?i:moi,? c'est) {_NAME}\b")),
    ("fr", "age", re.compile(r"\b(?i:j'ai) (?P<age>\d{1,2}) ans\b")),
    (
        "en",
        "childhood",
        re.compile(rf"\b(?i:spent (?:my|all my) (?:whole |entire )?childhood in) {_PLACE}"),
    ),
    (
        "fr",
        "childhood",
        re.compile(rf"\b(?i:j'ai passé (?:toute )?mon enfance (?:à|a|en|au)) {_PLACE}"),
    ),
    (  # "Being raised on a farm in Iowa, ...", "I was raised in Cork" (not "my dad was")
        "en",
        "childhood",
        re.compile(
            rf"^(?i:being|i was|i got) (?i:raised|brought up)(?: [a-z ]{{0,20}})? in {_PLACE}"
        ),
    ),
    (
        "fr",
        "childhood",
        re.compile(
            rf"^(?i:j'ai été|je suis) (?i:élevée?|née? et élevée?) (?:à|a|en|au) "
            rf"{_PLACE}"
        ),
    ),
)
_PETS = (
    "cat|kitten|dog|puppy|rabbit|hamster|parrot|tortoise|horse|chat|chaton|chatte|chien|chiot|"
    "chienne|lapin|perroquet|tortue|cheval"
)
# A pet given its name, or a new one: "we named the kitten Sushi", "renamed the dog Rex",
# "on a rebaptisé le lapin : il s'appelle maintenant Noisette".
_PET_NAMING = (
    (
        "en",
        re.compile(
            rf"\b(?i:(?:re)?named|(?:re)?called) (?i:the|our|my) (?P<pet>(?i:{_PETS})) {_NAME}"
        ),
    ),
    (
        "fr",
        re.compile(
            r"\b(?i:(?:re)?baptis[ée]s?|appel[ée]s?|nomm[ée]s?|renomm[ée]s?) "
            rf"(?i:le|la|notre|mon|ma) (?P<pet>(?i:{_PETS}))\s*"
            rf"(?:[:,;]\s*(?i:il|elle) s'appelle (?:maintenant |désormais )?)?{_NAME}"
        ),
    ),
)
_SAID_AS = {
    ("en", "pet"): "The user's {pet} is called {name}.",
    ("fr", "pet"): "{article}{pet} de l'utilisateur s'appelle {name}.",
    ("en", "name"): "The user's name is {name}.",
    ("en", "age"): "The user is {age}.",
    ("fr", "name"): "L'utilisateur s'appelle {name}.",
    ("fr", "age"): "L'utilisateur a {age} ans.",
    ("en", "childhood"): "The user spent their childhood in {place}.",
    ("fr", "childhood"): "L'utilisateur a passé son enfance à {place}.",
}
_NOT_NAMES = frozenset(fold(w) for w in (*_NATIONALITIES, *_WEEKDAYS, *_MONTHS)) | {
    "sorry",
    "not",
    "just",
    "back",
    "here",
    "done",
    "fine",
    "ok",
    "okay",
    "new",
    "home",
    "so",
}


def _introduced(sentence: str, today: date, language: str | None) -> list[dict]:
    """What an introduction says of the user (name, age, childhood); [] for anything else."""
    folded = fold(sentence)
    if _NOT_THE_USER.search(folded) or _HYPOTHETICAL.search(folded):
        return []  # "I'm Claude, an AI assistant", "if I were Anna, ..."
    out = []
    for lang, what, pattern in _INTRODUCTIONS:
        found = pattern.search(sentence)
        if not found or (language and language != lang):
            continue
        values = found.groupdict()
        if "name" in values and fold(values["name"]) in _NOT_NAMES:
            continue
        if what == "age" and not 5 <= int(values["age"]) <= 99:
            continue
        context = {
            "category": "fondatrice",
            "kind": "self",
            "subjects": [fold(values[k]) for k in ("name", "place") if values.get(k)],
            "tags": [TAG, "places" if what == "childhood" else "identity"],
            "date": today.isoformat(),
        }
        out.append(
            {"content": _SAID_AS[lang, what].format(**values), "context": context, "language": lang}
        )
    return out


def _pet_named(sentence: str, today: date, language: str | None) -> list[dict]:
    """A pet's name as the user gave it: "The user's kitten is called Miso"; [] otherwise."""
    folded = fold(sentence)
    if sentence.rstrip().endswith("?") or _HYPOTHETICAL.search(folded):
        return []
    out = []
    for lang, pattern in _PET_NAMING:
        found = pattern.search(sentence)
        if not found or (language and language != lang) or fold(found["name"]) in _NOT_NAMES:
            continue
        pet = found["pet"].lower()
        article = "La " if pet in ("chatte", "chienne", "tortue") else "Le "
        context = {
            "category": "thematique",
            "kind": "fact",
            "subjects": [fold(found["name"]), fold(pet)],
            "tags": [TAG],
            "date": today.isoformat(),
        }
        content = _SAID_AS[lang, "pet"].format(pet=pet, name=found["name"], article=article)
        out.append({"content": content, "context": context, "language": lang})
    return out


def facts_in(text: str, *, language: str | None = None, today: date | None = None) -> list[dict]:
    """The facts about the user that `text` (the user's own words) states in passing, as
    add_thoughts items ({"content", "context"}) plus "language"; [] when there are none.
    `language` ("en" / "fr") keeps only statements in that language; `today` dates the facts
    and their expiry (default: today)."""
    if not isinstance(text, str) or not text.strip():
        return []
    today = today or date.today()
    out: list[dict] = []
    seen: set[str] = set()
    asked = asked_to_remember(text)
    for said in _sentences(_clean(text)):
        sentence = without_secrets(said)
        if not sentence or (sensitive_about_others(sentence) and not asked):
            continue
        named = _pet_named(sentence, today, language)  # says it all: the sentence's fact is this
        introductions = named or _introduced(sentence, today, language)
        for introduced in introductions:
            if introduced["content"] not in seen:
                seen.add(introduced["content"])
                out.append(introduced)
        fact = None if named else _fact_of(sentence, today, language)
        found = [fact]
        if not fact and not introductions:  # the first clause said nothing: the others may
            found = [_fact_of(clause, today, language) for clause in _clauses(sentence)]
        found += [f for f in [_someones_age(sentence, today, language)] if f]
        for fact in found:
            if fact is None or fact["content"] in seen:
                continue
            seen.add(fact["content"])
            if out and _continues_plan(out[-1], fact):
                out[-1] = _joined(out[-1], fact)  # "We're going to Peru. We leave on 12 May."
                continue
            out.append(fact)
        if len(out) >= MAX_FACTS:
            break
    return out[:MAX_FACTS]


# A clause of its own that opens with the user, after what came before it ("I left the
# hospital; I'm a designer now", "Tigrou est mort ; on a adopté une chatte"); not after "so".
_CLAUSE_START = re.compile(
    r"\s*(?:;|:|,|\s[-—–])\s*(?:(?:and|but|now|et|mais|maintenant)\s+)?"
    r"(?=(?:i|i'm|i've|i'll|we|we're|we've|my|our|je|j'|on|nous|mon|ma|mes)(?:\b|(?<='))(?!'d))",
    re.IGNORECASE,
)


def _clauses(sentence: str) -> list[str]:
    """The clauses after the first that open with the user, when the whole sentence is
    neither a hypothesis, nor addressed to the assistant, nor someone else's voice."""
    folded = fold(sentence)
    if (
        _HYPOTHETICAL.search(folded)
        or _FR_CONDITIONAL.search(folded)
        or _EN_CONDITIONAL.search(folded)
        or _SECOND_PERSON.search(folded)
        or _NOT_THE_USER.search(folded)
        or re.search(r"[\"«»“”]", sentence)
    ):
        return []
    return [c.strip() for c in _CLAUSE_START.split(sentence)[1:] if c.strip()]


# Someone of theirs named by first name, and the age they are now: "Idris turned 7 on
# Sunday", "Isla is 4 now", "Lina a eu 6 ans", "Hugo vient de fêter ses 9 ans". A child's
# age only (under 18): a grown-up's first name may be anyone's.
_SOMEONES_AGE = (
    (
        "en",
        re.compile(
            rf"^{_NAME} (?:has )?(?:just )?(?:is|turned|turns) (?P<age>\d{{1,2}})"
            r"(?: years old)?(?=$|[,;.!]|\s+(?:now|today|yesterday|on|last|this|and|in)\b)"
        ),
        "{name} is {age}.",
    ),
    (
        "fr",
        re.compile(
            rf"^{_NAME} (?:a|a eu|vient d'avoir|vient de f[eê]ter ses|f[eê]te ses|"
            r"a f[eê]t[eé] ses) (?P<age>\d{1,2}) ans\b"
        ),
        "{name} a {age} ans.",
    ),
)


def _someones_age(sentence: str, today: date, language: str | None) -> dict | None:
    """The age of one of the user's children named by first name, said as news of them."""
    sentence = _FILLER.sub("", sentence).strip()
    folded = fold(sentence)
    if sentence.endswith("?") or _HYPOTHETICAL.search(folded) or _NOT_THE_USER.search(folded):
        return None
    for lang, pattern, said_as in _SOMEONES_AGE:
        found = pattern.match(sentence)
        if not found or (language and language != lang) or int(found["age"]) > 17:
            continue
        if fold(found["name"]) in _NOT_NAMES:
            continue
        context = {
            "category": "thematique",
            "kind": "fact",
            "subjects": [fold(found["name"])],
            "tags": [TAG, "family"],
            "date": today.isoformat(),
        }
        content = said_as.format(**found.groupdict())
        return {"content": content, "context": context, "language": lang}
    return None


_WHEN_WORDS = re.compile(
    rf"\b(\d{{1,2}}|{'|'.join(_WEEKDAYS)}|{'|'.join(_MONTHS)}|next|tomorrow|prochain|"
    r"prochaine|demain)\b"
)
_USER_OPENING = re.compile(r"^(The user|L'utilisat(?:eur|rice)) ")


def _continues_plan(plan: dict, fact: dict) -> bool:
    """`fact` says when the plan before it happens, and names no place of its own."""
    return (
        plan["context"]["kind"] == "goal"
        and bool(plan["context"]["subjects"])
        and plan["language"] == fact["language"]
        and not fact["context"]["subjects"]
        and bool(_WHEN_WORDS.search(fold(fact["content"])))
    )


def _joined(plan: dict, fact: dict) -> dict:
    """One plan: its place from the first sentence, its date from the second."""
    rest = _USER_OPENING.sub("", fact["content"])
    joiner = " et " if plan["language"] == "fr" else " and "
    context = dict(plan["context"])
    context["tags"] = list(dict.fromkeys([*context["tags"], *fact["context"]["tags"]]))
    context.pop("ttl", None)  # a plan holds until its date, then reads as past
    context["category"] = "thematique"
    content = plan["content"].rstrip(".") + joiner + rest
    return {"content": content, "context": context, "language": plan["language"]}


# Where a sentence's clauses part ("I'm a nurse and my password is ...").
_CLAUSE = re.compile(r"(\s*[,;]\s*(?:and |but |et |mais )?|\s+(?:and|but|et|mais)\s+)", re.I)


def without_secrets(sentence: str) -> str:
    """The sentence without its clauses that hold a secret (ikario_rag/secrets.py): "I'm a
    nurse and my password is X" teaches that they are a nurse, and nothing of the password."""
    if not secrets.find(sentence):
        return sentence
    parts = _CLAUSE.split(sentence)
    kept: list[str] = []
    for pos in range(0, len(parts), 2):
        clause = parts[pos]
        if clause.strip() and not secrets.find(clause):
            if kept:
                kept.append(parts[pos - 1])
            kept.append(clause)
    return "".join(kept).strip()


def as_item(fact: dict) -> dict:
    """The add_thoughts item of a fact (without the "language" key)."""
    return {"content": fact["content"], "context": dict(fact["context"])}
