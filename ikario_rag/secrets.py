"""Secrets: what is never stored, even said in passing (passwords, PINs, door codes, keys and
tokens, card numbers, bank accounts, national id numbers), in English and French.

One rule for every writer: the memory server replaces each secret by a placeholder before
anything is stored ("[a password]", "[un mot de passe]": the language of the word that named
it, else of the text), the web app's learning, health and bench read the same rule.

A secret is recognised two ways:
- by its shape alone, when the shape proves it: the prefixes of issued keys (`sk-ant-`,
  `AKIA`, `ghp_`...), a PEM private key, a card number that passes Luhn with an issuer's
  prefix and length, an IBAN whose mod-97 checksum holds, a French NIR whose key holds, a
  US SSN written 3-2-4, a password in a URL (`https://user:pass@host`); the checksums are
  python-stdnum's;
- in context: a word that names a secret ("password", "code de la porte", "PIN", "api key",
  "numéro de sécu"...), a few words at most, a link ("is", ":", "=", "c'est", "set to"...)
  and a value that looks like one (a value is not a word that describes the secret: "my
  password is weak", "mon code PIN est oublié" keep their words).

Pure Python (no Django, no model; python-stdnum, itself pure): the web app may import it
(tests/test_architecture.py).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from stdnum import iban as stdnum_iban
from stdnum import luhn as stdnum_luhn
from stdnum.fr import nir
from stdnum.us import ssn

from ikario_rag import lexicon
from ikario_rag.text import fold_in_place as fold

# Kinds, and how a placeholder names each ("en", "fr").
NAMES = {
    "password": ("a password", "un mot de passe"),
    "pin": ("a PIN", "un code PIN"),
    "code": ("a code", "un code"),
    "key": ("a key", "une clé"),
    "private key": ("a private key", "une clé privée"),
    "card number": ("a card number", "un numéro de carte"),
    "bank account": ("a bank account number", "un numéro de compte"),
    "id number": ("an id number", "un numéro d'identité"),
}


@dataclass(frozen=True)
class Secret:
    start: int
    end: int
    kind: str
    language: str  # of the placeholder: "en" or "fr"


@dataclass(frozen=True)
class Redacted:
    text: str
    kept_out: tuple[str, ...]  # the kinds replaced, in order, each once
    values: tuple[str, ...]  # the secrets themselves (to drop a label that repeats one)


def placeholder(kind: str, language: str = "en") -> str:
    en, fr = NAMES[kind]
    return f"[{fr if language == 'fr' else en}]"


# --- shapes that prove themselves ------------------------------------------------------------

_ISSUED_KEY = re.compile(
    r"(?<![A-Za-z0-9])(?:"
    r"sk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{16,}"
    r"|(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|hf_[A-Za-z0-9]{30,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|npm_[A-Za-z0-9]{30,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"
    r")"
)
_PEM = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.DOTALL
)
_URL_PASSWORD = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@", re.IGNORECASE)
# NAME_WITH_SECRET=value, as in a .env file or a shell line.
_ASSIGNED = re.compile(
    r"\b[A-Za-z0-9_]{0,40}(SECRET|TOKEN|PASSWORD|PASSWD|PWD|API_?KEY|PRIVATE_KEY|ACCESS_KEY)"
    r"[A-Za-z0-9_]{0,40}\s*[=:]\s*[\"']?([^\s\"']{4,})",
    re.IGNORECASE,
)
_ASSIGNED_HINT = re.compile(r"(?:SECRET|TOKEN|PASS|PWD|KEY)\w*\s*[=:]", re.IGNORECASE)
_CARD = re.compile(r"(?<![\w.-])\d(?:[ -]?\d){12,18}(?![\w-]|\.\d)")
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_SSN = re.compile(r"(?<![\w-])(\d{3})-(\d{2})-(\d{4})(?![\w-])")
_NIR = re.compile(
    r"(?<![\w])([12])[ .]?(\d{2})[ .]?(\d{2})[ .]?(\d{2}|2[AB])[ .]?(\d{3})[ .]?(\d{3})"
    r"[ .]?(\d{2})(?![\w])",
    re.IGNORECASE,
)


def luhn(digits: str) -> bool:
    """The Luhn check every payment card number passes."""
    return digits.isdigit() and stdnum_luhn.is_valid(digits)


def card_issuer(digits: str) -> bool:
    """Whether a number has the prefix and length of a card issuer (Visa, Mastercard, Amex,
    Discover, JCB, Diners, UnionPay): an EAN barcode or an order number rarely does."""
    n = len(digits)
    if digits[0] == "4":
        return n in (16, 19)
    two, four = int(digits[:2]), int(digits[:4])
    if 51 <= two <= 55 or 2221 <= four <= 2720:
        return n == 16
    if two in (34, 37):
        return n == 15
    if digits.startswith(("6011", "65")) or 644 <= int(digits[:3]) <= 649:
        return 16 <= n <= 19
    if 3528 <= four <= 3589:
        return 16 <= n <= 19
    if two in (36, 38) or 300 <= int(digits[:3]) <= 305:
        return 14 <= n <= 19
    if two == 62:
        return 16 <= n <= 19
    return False


def iban_valid(value: str) -> bool:
    """An IBAN: its country's format and its mod-97 checksum (ISO 13616)."""
    return stdnum_iban.is_valid(value)


def nir_valid(match: re.Match) -> bool:
    """A French social security number (NIR) with its two-digit key."""
    return nir.is_valid(match.group())


def ssn_valid(match: re.Match) -> bool:
    """A US social security number that may have been issued (not 000, 666, 9xx...)."""
    return ssn.is_valid(match.group())


# --- secrets named in context ----------------------------------------------------------------

# The words that name a secret, by kind. Each is matched folded (lower case, no accents).
_NAMED = (
    (
        "password",
        r"passwords?|passwd|pass ?words?|passphrase|pass phrase|pass ?codes?|pwd|pw|mdp"
        r"|mots? de passe"
        r"|wi-?fi (?:key|code)|wpa key|network key|cle (?:du )?wi-?fi|cle wpa|code wi-?fi"
        r"|phrase de passe|seed phrase|recovery phrase|phrase de recuperation",
    ),
    ("pin", r"pin(?: code| number)?|code pin|puk|nip|code confidentiel|code de (?:la )?carte"),
    (
        "code",
        r"(?:door|gate|entry|building|front door|alarm|access|garage|safe|lock|locker|keypad"
        r"|padlock|security|verification|confirmation|one-time|2fa|otp|sms|unlock|unlocking"
        r"|phone|bike lock|backup|recovery|lockbox|key ?box|intercom|apartment|flat) codes?"
        r"|key ?codes?|digicode|code secret|code d'entree|code d'acces"
        r"|code de (?:la |l')?(?:porte|alarme"
        r"|immeuble|portail|cadenas|coffre|garage|securite|verification|confirmation"
        r"|deverrouillage|boite a cles|residence|batiment|interphone|telephone|secours)"
        r"|code du (?:portail|cadenas|coffre|garage|telephone|batiment|digicode|velo)"
        r"|codes? de secours|cvv|cvc|cvv2|cryptogramme|combination|combinaison",
    ),
    (
        "key",
        r"api[ -]?keys?|api[ -]?tokens?|access[ -]?keys?|secret[ -]?(?:access[ -]?)?keys?"
        r"|private[ -]?keys?|auth(?:entication)?[ -]?tokens?|access[ -]?tokens?"
        r"|refresh[ -]?tokens?|bearer(?: token)?|tokens?|client secret|secret"
        r"|cles? (?:d'|de l')?api|cle secrete|cle d'acces|cle privee|jetons?(?: d'acces)?"
        r"|license key|licence key|product key|cle de licence|cle produit",
    ),
    (
        "card number",
        r"(?:credit |debit |bank )?card(?: number| no\.?)?|numero de (?:la )?carte(?: bancaire)?"
        r"|carte bancaire|carte bleue|cb|visa|mastercard|amex",
    ),
    (
        "bank account",
        r"iban|rib|bic|account number|bank account(?: number)?|routing number|sort code"
        r"|numero de compte|compte bancaire",
    ),
    (
        "id number",
        r"ssn|social security(?: number| no\.?)?|national insurance(?: number)?|nino"
        r"|passport(?: number| no\.?)?|driver'?s licen[cs]e(?: number)?|tax id|tin"
        r"|numero de (?:securite sociale|secu|passeport|permis|carte d'identite|carte vitale"
        r"|sécu|nir|fiscal)|nir|secu|numero fiscal|carte vitale",
    ),
    # Words that name a secret only when a value with a digit or a sign follows them
    # ("the wifi is slow", "the code review" are no secrets; "wifi: LakeHouse2019" is).
    ("password", r"wi-?fi|pass"),
    ("code", r"codes?"),
)
# The entries above whose value must hold a digit or a sign.
_STRICT = {f"k{len(_NAMED) - 2}", f"k{len(_NAMED) - 1}"}
_NAMED_RE = re.compile(
    r"\b(?:" + "|".join(f"(?P<k{n}>{words})" for n, (_, words) in enumerate(_NAMED)) + r")\b"
)
_KIND_OF_GROUP = {f"k{n}": kind for n, (kind, _) in enumerate(_NAMED)}
# Words before "code" that make it something else than a secret ("zip code", "code promo").
_NOT_SECRET_BEFORE = re.compile(
    r"\b(?:zip|postal|area|country|error|status|exit|return|http|promo|promotional|discount"
    r"|coupon|voucher|referral|dress|source|qr|bar|morse|iso|airport|product|course|class"
    r"|tax|naf|ape|color|colour|genetic|machine|python|sample|my own|the same|reset"
    r"|returned|returns|response|exit|activation|invite|invitation|pairing|cheat|zip"
    r"|forgot|forgotten|change|changed|new|credit|old)\s*$"
)
_NOT_SECRET_AFTER = re.compile(
    r"^\s*(?:postal|promo|de la route|civil|du travail|penal|de reduction|source|d'erreur"
    r"|erreur|pays|naf|ape|de parrainage"
    r"|vestimentaire|barre|couleur|genetique|manager|reset|resets|policy|policies|rules?"
    r"|requirements?|strength|field|hint|hygiene|vault|gestionnaire"
    r"|oublie|perdu)\b"
)
# What links the name to its value.
_LINK = re.compile(
    r"\s*(?:'s\b|’s\b|it's\b|it is\b|that's\b|now\b|be\b|is\b|was\b|are\b|were\b|will be\b"
    r"|is now\b|became\b|reads\b|stays\b"
    r"|remains\b|est\b|etait\b|sera\b|c'est\b|reste\b|devient\b|[:=]|->|→|-(?=\s)"
    r"|to\b|into\b|as\b|en\b|a\b|for it is\b|for it's\b)(?:\s*(?:still|now|always|toujours"
    r"|maintenant|désormais|desormais|just|juste|simply|simplement|actually|en fait|:))*\s*",
)
# Links too common to tie a bare "code" or "wifi" to a number ("changed in 2024").
_WEAK_LINK = re.compile(r"to|into|as|en|a|be|now")
_VALUE = re.compile(r"[\"'«“‘]\s*([^\"'»”’]{1,80}?)\s*[\"'»”’]|(\S+)")
# Words that describe a secret rather than being one (and the words a clause goes on with).
_DESCRIBING = frozenset(
    """
    weak strong long short secure safe unsafe expired wrong incorrect correct right same
    different new old changed reset stored saved written hard easy simple complicated
    complex lost forgotten compromised leaked stolen hacked required needed mandatory
    optional unknown private secret shared personal too very not in on at the a an my your
    his her our their its this that these those there here it what which who somewhere
    something nothing everywhere set changed updated generated random unique numeric
    alphanumeric digits digit characters letters chars case-sensitive sensitive valid
    invalid blocked locked required working broken fine ok okay good bad great awful
    terrible strange weird annoying impossible possible still also just always never
    usually sometimes probably maybe definitely written stuck saved printed taped below
    above attached enclosed encrypted hashed hidden visible displayed shown sent emailed
    texted same-as based with without from for by of to and or but if so because like
    about over under after before during since until
    faible fort forte long longue court courte securise securisee sur sure expire expiree
    faux fausse bon bonne meme different differente nouveau nouvelle ancien ancienne change
    changee perdu perdue oublie oubliee vole volee pirate piratee obligatoire requis
    inconnu inconnue prive privee secret secrete personnel personnelle trop tres pas dans
    sur le la les un une des mon ma mes ton ta tes son sa ses notre votre leur ce cet cette
    ces ici la-bas quelque rien bloque bloquee verrouille valide invalide simple compliquee
    complique difficile facile chiffres caracteres lettres toujours encore aussi juste
    note notee ecrit ecrite enregistre enregistree cache cachee affiche envoye et ou mais
    si donc car comme avec sans de du des pour par en au aux chez vers sous apres avant
    depuis pendant entre
    one two three four five six seven eight nine ten
    un deux trois quatre cinq six sept huit neuf dix
    """.split()  # noqa: SIM905
)
_CLAUSE_END = frozenset(
    """and but so because or then which who when while since
    et mais donc car ou puis qui quand alors""".split()  # noqa: SIM905
)
_AMOUNT_AFTER = re.compile(
    r"^\s*(?:digits?|characters?|chars?|letters?|numbers?|chiffres?|caracteres?|lettres?"
    r"|long|longs?|words?|mots?)\b"
)
_WORD = re.compile(r"\s*(?:[^\s:=]+|[:=])")
_DIGIT = re.compile(r"\d")
_WINDOW = 240
# Names of secrets looked at in one text: a 40,000-character text of "code 1 code 1..."
# costs 1.2 s without a bound, 0.2 s with it; a real memory names a few.
_MOST_NAMES = 1000
_GAP_WORDS = 6  # words between a secret's name and its link ("the password for my bank is")
_SENTENCE_STOP = re.compile(r"[.!?;\n](?:\s|$)")


def _language_of(text: str) -> str:
    return lexicon.language(text)


def _name_language(name: str) -> str:
    french = re.search(
        r"mot|mdp|cle|code (?:de|du|d'|pin|secret|confidentiel)|digicode|numero|carte|jeton"
        r"|compte|secu|cryptogramme|combinaison|phrase de|nip|confidentiel",
        name,
    )
    return "fr" if french else "en"


def _looks_like_value(value: str, kind: str, direct: bool) -> bool:
    """Whether a word after a secret's name is the secret itself."""
    bare = value.strip(".,;:!?)]}»\"'”’(")
    if not bare:
        return False
    folded = fold(bare)
    if folded in _DESCRIBING or folded.rstrip("s") in _DESCRIBING:
        return False
    digits = sum(c.isdigit() for c in bare)
    has_symbol = any(not c.isalnum() for c in bare)
    if kind in ("pin", "code", "card number", "bank account", "id number"):
        if kind == "pin":
            return digits >= 3 and digits >= len(bare.replace(" ", "")) - 2
        if kind == "code":
            return digits >= 2 or (len(bare) >= 4 and bare.isupper() and bare.isalnum())
        return digits >= 4
    if kind == "key":
        return len(bare) >= 8 and (digits > 0 or len(bare) >= 16 or has_symbol)
    # A password: after its link anything not describing it; with no link, something that
    # is no word ("password hunter2").
    if direct:
        return digits > 0 or has_symbol
    return len(bare) >= 3 or digits > 0


def _value_end(text: str, folded: str, start: int, kind: str) -> int:
    """Where a password that goes on in words ends (a passphrase): the clause's end."""
    end = start
    for words, match in enumerate(re.finditer(r"\S+", text[start : start + _WINDOW]), 1):
        word = fold(match.group()).strip(".,;:!?)]}»\"'”’(")
        if words > 1 and (word in _CLAUSE_END or word in _DESCRIBING or not word.isalpha()):
            break
        end = start + match.end()
        if re.search(r"[.,;:!?)]$", match.group()) or kind != "password" or words >= 6:
            break
    return end


def _trim(text: str, start: int, end: int) -> int:
    """The end of a value without the sentence's punctuation after it."""
    while end > start and text[end - 1] in ".,;:)]}»\"'”’":
        end -= 1
    return end


def _named_secrets(text: str, folded: str) -> list[Secret]:
    found: list[Secret] = []
    for name in itertools.islice(_NAMED_RE.finditer(folded), _MOST_NAMES):
        kind = _KIND_OF_GROUP[name.lastgroup]
        strict = name.lastgroup in _STRICT
        words = name.group()
        before = folded[max(0, name.start() - 40) : name.start()]
        if "code" in words and _NOT_SECRET_BEFORE.search(before):
            continue
        if _NOT_SECRET_AFTER.match(folded[name.end() : name.end() + 40]):
            continue
        language = _name_language(words)
        # A value is looked for in the rest of the sentence, at most _WINDOW characters.
        tail_end = min(len(text), name.end() + _WINDOW)
        stop = _SENTENCE_STOP.search(folded, name.end(), tail_end)
        if stop is not None:
            tail_end = stop.start()
        position = name.end()
        hit = None
        if _LINK.match(folded, position, tail_end) is None:
            hit = _value_after(text, folded, position, tail_end, kind, direct=True)
        gap = 0
        while hit is None and gap <= _GAP_WORDS and position < tail_end:
            link = _LINK.match(folded, position, tail_end)
            if link is not None and strict and _WEAK_LINK.fullmatch(link.group().strip()):
                link = None  # "le code de la route a changé en 2024"
            if link is not None and link.end() > position:
                hit = _value_after(text, folded, link.end(), tail_end, kind, direct=False)
                if hit is not None:
                    break
            word = _WORD.match(folded, position, tail_end)
            if word is None:
                break
            position = word.end()
            gap += 1
        if hit is not None and strict and not re.search(r"\d|[^\w\s]", text[hit[0] : hit[1]]):
            hit = None
        if hit is not None:
            start, end = hit
            found.append(Secret(start, end, kind, language))
    return found


def _value_after(text, folded, start, limit, kind, *, direct) -> tuple[int, int] | None:
    if direct and not re.match(r"\s*[#:]?\s*\S", folded[start:limit]):
        return None
    position = start
    if direct:
        position = re.match(r"\s*(?:#|n°|no\.?|number)?\s*", folded[start:limit]).end() + start
    value = _VALUE.match(text, position, limit)
    if value is None:
        return None
    if value.group(1) is not None:  # quoted: everything between the quotes
        return (value.start(), value.end())
    candidate = value.group(2)
    after = folded[value.end() : limit]
    if _AMOUNT_AFTER.match(after):
        return None
    numbered = ("card number", "bank account", "id number", "pin", "code")
    if kind in numbered and _DIGIT.search(candidate):
        # Numbers are often written in groups ("4111 1111 1111 1111", "12-34-56").
        grouped = re.match(r"[A-Z0-9][A-Z0-9 .-]*[A-Z0-9]|\S", text[position:limit], re.I)
        if grouped is not None and len(_DIGIT.findall(grouped.group())) >= 4:
            piece = grouped.group()
            # Stop where a word begins ("4821 and I live..." keeps " and").
            piece = re.match(r"(?:[A-Z0-9]+(?:[ .-](?=[A-Z]*\d)[A-Z0-9]+)*)", piece, re.I)
            if piece is not None:
                candidate = piece.group()
    if not _looks_like_value(candidate, kind, direct):
        return None
    end = position + len(candidate)
    if kind == "password" and not direct and candidate.isalpha():  # a passphrase
        end = max(end, _value_end(text, folded, position, kind))
    end = _trim(text, position, end)
    if end == limit and text[end : end + 1] in ("!", "?"):
        end += 1  # "Bl4ck!" at a sentence's end: the sign may be the secret's own
    return (position, end) if end > position else None


def _shaped_secrets(text: str) -> list[Secret]:
    found: list[Secret] = []
    # Cheap tests first: most texts hold no URL, no key block, no NAME=value.
    pem = _PEM.finditer(text) if "PRIVATE KEY" in text else ()
    url = _URL_PASSWORD.finditer(text) if "://" in text else ()
    assigned = _ASSIGNED.finditer(text) if _ASSIGNED_HINT.search(text) else ()
    for match in pem:
        found.append(Secret(match.start(), match.end(), "private key", ""))
    for match in _ISSUED_KEY.finditer(text):
        found.append(Secret(match.start(), match.end(), "key", ""))
    for match in url:
        found.append(Secret(match.start(1), match.end(1), "password", ""))
    for match in assigned:
        kind = "password" if re.match(r"pass|pwd", match.group(1), re.I) else "key"
        found.append(Secret(match.start(2), match.end(2), kind, ""))
    for match in _CARD.finditer(text):
        digits = re.sub(r"\D", "", match.group())
        if 13 <= len(digits) <= 19 and luhn(digits) and card_issuer(digits):
            found.append(Secret(match.start(), match.end(), "card number", ""))
    for match in _IBAN.finditer(text):
        value = match.group().rstrip()
        if iban_valid(value):
            found.append(Secret(match.start(), match.start() + len(value), "bank account", ""))
    for match in _SSN.finditer(text):
        if ssn_valid(match):
            found.append(Secret(match.start(), match.end(), "id number", ""))
    for match in _NIR.finditer(text):
        if nir_valid(match):
            found.append(Secret(match.start(), match.end(), "id number", ""))
    return found


def find(text: str) -> list[Secret]:
    """Every secret in `text`, in order, overlapping ones merged (the first kind kept)."""
    if not text:
        return []
    folded = fold(text)
    language = _language_of(text)
    found = _shaped_secrets(text) + _named_secrets(text, folded)
    found.sort(key=lambda s: (s.start, -s.end))
    merged: list[Secret] = []
    for secret in found:
        if merged and secret.start < merged[-1].end:
            last = merged[-1]
            if secret.end > last.end:
                merged[-1] = Secret(last.start, secret.end, last.kind, last.language)
            continue
        merged.append(secret)
    return [Secret(s.start, s.end, s.kind, s.language or language) for s in merged]


def redact(text: str) -> Redacted:
    """`text` with each secret replaced by its placeholder, and what was kept out."""
    found = find(text)
    if not found:
        return Redacted(text, (), ())
    pieces: list[str] = []
    last = 0
    kinds: list[str] = []
    for secret in found:
        pieces.append(text[last : secret.start])
        pieces.append(placeholder(secret.kind, secret.language))
        last = secret.end
        if secret.kind not in kinds:
            kinds.append(secret.kind)
    pieces.append(text[last:])
    values = tuple(text[s.start : s.end] for s in found)
    return Redacted("".join(pieces), tuple(kinds), values)


def kind_in(text: str) -> str | None:
    """The kind of the first secret `text` holds, or None."""
    found = find(text)
    return found[0].kind if found else None
