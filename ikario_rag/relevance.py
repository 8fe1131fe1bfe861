"""relevance_score: the probability that a memory is what a query is about, the same
meaning in every search mode and for every query length.

0.5 separates "relevant" from "not": a memory that answers the message, or that the
message needs (an allergy when planning a meal), scores above it; an unrelated one below;
a query that says nothing ("test test test", "asdf", a lone stop word) matches nothing.

It is a logistic model of a few features of (query, memory), fitted on the labelled
auto-recall set (bench/quality/recall_dev.json, with bench/_fit_relevance.py):

- `semantic`: the cosine of their vectors, less the memory's own mean cosine to a fixed
  bank of neutral sentences (`BANK`, English and French). all-MiniLM-L6-v2 is English-first:
  any two French sentences score 0.4-0.6, so a raw cosine means one thing in English and
  another in French; measured against what the memory scores with sentences about nothing
  in particular, it means the same in both (on the dev set the area under the ROC curve of
  English and French pairs pooled goes from 0.85 to 0.91).
- `names`, `relations`, `specific`, `generic`: the query's terms found in the memory
  (lexicon.terms: stemmed, French mapped to English), by kind: a name the user wrote with a
  capital ("Emma", "Titine"), a person or thing ("sister", "soeur", "car"), another
  specific word ("piano"), a common word ("time", "jour").
- `coverage`: the share of the memory's terms the query has (a long exchange that shares
  one word is less about the query than a short fact that does).
- `link`: the query is about a life domain (a meal, a medical question, exercise, travel,
  work, a language, somewhere nearby, the family) that the memory constrains or answers (a
  food allergy or a diet, a drug allergy or a condition, an injury or a race, a planned trip
  or flight, the user's job, a language learnt, where the user lives, a relative), for the
  user or for someone the query names (the family names each relative).
- `conversation`: the memory is a saved exchange (kind conversation): they share words
  with many queries by their length alone, so they need more. By chance they share some of
  a query's keywords (its terms that are not common words), not every one: an exchange
  that holds every keyword ("jazz" in a chat about jazz) is not penalised.
- `keywords` (not weighted): the share of the query's keywords the memory holds. When it
  is 1 (every one: "Sintra" in a note about a trip there), the score is at least text mode's:
  the vectors may add to a full match of the query's words, never take it away (a one-word
  query's vector is a poor reading of it: a place name's cosine to a French sentence that
  names it is often below the memory's baseline).

Text mode has no vectors: the same model without `semantic` (fitted apart) gives scores
with the same meaning, less sure of indirect needs.
"""

from __future__ import annotations

import json
import math
import re
import threading
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

import numpy as np

from ikario_rag import lexicon, text

# Neutral sentences (no person, place or topic a user's memory is likely about), half in
# each language: what a memory's vector scores against them is its baseline.
BANK = (
    "The meeting was moved to Thursday afternoon.",
    "He bought a second-hand sofa online.",
    "The train to the airport was twenty minutes late.",
    "She has been reading a lot of science fiction lately.",
    "Our neighbours are repainting their fence.",
    "The printer at the office ran out of toner again.",
    "They went to a concert in the park last summer.",
    "I need to renew my passport before the end of the year.",
    "The soup needed more salt.",
    "My colleague is moving to another team next month.",
    "We watched a documentary about octopuses.",
    "The bakery down the road opens at seven.",
    "He forgot his umbrella on the bus.",
    "The kids built a snowman in the garden.",
    "She is thinking about changing jobs.",
    "The hotel room had a view of the harbour.",
    "I spent the weekend cleaning the garage.",
    "The football match ended in a draw.",
    "He is saving money for a new laptop.",
    "The library is closed on public holidays.",
    "My phone battery drains very quickly.",
    "We planted a lemon tree on the balcony.",
    "The museum has a new exhibition on ancient Egypt.",
    "She likes to go jogging before work.",
    "The plumber is coming on Monday morning.",
    "I signed up for a pottery class.",
    "Their wedding was in a small village in the hills.",
    "The dentist appointment is next Wednesday.",
    "He plays chess online most evenings.",
    "The heating broke during the cold spell.",
    "La réunion a été déplacée à jeudi après-midi.",
    "Il a acheté un canapé d'occasion sur internet.",
    "Le train pour l'aéroport avait vingt minutes de retard.",
    "Elle lit beaucoup de science-fiction en ce moment.",
    "Nos voisins repeignent leur clôture.",
    "L'imprimante du bureau n'a plus d'encre.",
    "Ils sont allés à un concert dans le parc l'été dernier.",
    "Je dois renouveler mon passeport avant la fin de l'année.",
    "La soupe manquait de sel.",
    "Mon collègue change d'équipe le mois prochain.",
    "Nous avons regardé un documentaire sur les pieuvres.",
    "La boulangerie du coin ouvre à sept heures.",
    "Il a oublié son parapluie dans le bus.",
    "Les enfants ont fait un bonhomme de neige dans le jardin.",
    "Elle pense à changer de travail.",
    "La chambre d'hôtel donnait sur le port.",
    "J'ai passé le week-end à ranger le garage.",
    "Le match de foot s'est terminé sur un match nul.",
    "Il économise pour un nouvel ordinateur portable.",
    "La bibliothèque est fermée les jours fériés.",
    "La batterie de mon téléphone se vide très vite.",
    "Nous avons planté un citronnier sur le balcon.",
    "Le musée a une nouvelle exposition sur l'Égypte ancienne.",
    "Elle aime courir avant le travail.",
    "Le plombier vient lundi matin.",
    "Je me suis inscrit à un cours de poterie.",
    "Leur mariage a eu lieu dans un petit village.",
    "Le rendez-vous chez le dentiste est mercredi prochain.",
    "Il joue aux échecs en ligne le soir.",
    "Le chauffage est tombé en panne pendant le froid.",
)
# A memory's baseline: the mean of its BASELINE_NEIGHBOURS best cosines with the bank.
BASELINE_NEIGHBOURS = 10

# Fitted weights (bench/_fit_relevance.py on bench/quality/recall_dev.json, 160 messages x
# 16 memories). The link's weight is the decision's, not the pairwise fit's (4.6 / 5.1): the
# fit counts every unneeded memory of a message that needs one as an error, while only what
# reaches the prompt matters; on the dev set link 4 -> recall 0.90, 5 -> 0.96, 6 -> 0.99,
# with no message that needs nothing getting a memory at any of them.
WEIGHTS = {
    "semantic": 5.45,
    "names": 5.5,
    "relations": 6.7,
    "specific": 4.9,
    "generic": 2.1,
    "coverage": 4.3,
    "link": 6.0,
    "conversation": -5.8,
}
BIAS = -4.57
TEXT_WEIGHTS = {
    "names": 6.5,
    "relations": 7.45,
    "specific": 5.6,
    "generic": 2.7,
    "coverage": 4.7,
    "link": 6.0,
    "conversation": -5.5,
}
TEXT_BIAS = -5.0

# Spans in quotes are words mentioned, not used ("translate 'good night'", « chat »).
_QUOTED = re.compile(r"«[^»]*»|“[^”]*”|\"[^\"]*\"|(?<!\w)'[^']*'(?!\w)")


@dataclass
class Query:
    """What a query is about, read once for all candidates."""

    content: str
    terms: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    meaningless: bool = False
    # Each keyword (a word that is not a common one) as the forms a memory may hold it in.
    keywords: set[frozenset[str]] = field(default_factory=set)


def read_query(query: str) -> Query:
    """The query's terms (quoted spans left out), names and life domains; `meaningless`
    when it has no content word, or one word repeated ("test test test"). A query of
    scaffold words only ("remember", "hello") is not meaningless: it is searched, and its
    results score on their vectors alone (no term to match)."""
    used = _QUOTED.sub(" ", query)
    all_terms = lexicon.terms(used)
    terms = set(all_terms)
    names = {
        text.fold(word)
        for word, capital in lexicon.cased_words(used)
        if capital and text.fold(word) not in _generic() and len(word) > 1
    }
    repeated = len(set(text.tokens(query))) == 1 and len(text.tokens(query)) > 1
    return Query(
        content=query,
        terms=terms,
        names=names,
        domains=lexicon.domains(terms),
        meaningless=not text.content_words(used) or repeated,
        keywords=_keywords(used, terms),
    )


def _keywords(used: str, terms: set[str]) -> set[frozenset[str]]:
    """The query's words that are terms and not common words, each as its forms in either
    language and folded (a memory in the other language, or with another casing, holds
    the word under one of them)."""
    lang = lexicon.language(used)
    generic = _generic_terms()
    found = set()
    for word, _ in lexicon.cased_words(used):
        term = lexicon.term(word, lang)
        if term in terms and term not in generic:
            forms = {term, text.fold(word), lexicon.term(word, "en"), lexicon.term(word, "fr")}
            found.add(frozenset(forms))
    return found


@cache
def _generic() -> frozenset[str]:
    """Common words of both languages (the stop-words package's long lists): matching one
    says little about what a memory is about."""
    from stop_words import get_stop_words

    words = {text.fold(w) for w in (*get_stop_words("en"), *get_stop_words("fr"))}
    return frozenset(words | lexicon.SCAFFOLD | lexicon.stop_words() | _TIME_WORDS)


# When something happens says little of what it is about ("bonne nuit", "this weekend").
_TIME_WORDS = lexicon.words(
    "day days night nights morning mornings evening evenings afternoon tonight today tomorrow "
    "spring summer autumn fall winter printemps ete automne hiver "
    "yesterday week weeks weekend month months year years time hour hours minute "
    "jour jours nuit nuits matin matins soir soirs soiree apres-midi aujourd demain hier "
    "semaine semaines week-end mois an ans annee annees heure heures minute temps fois"
)


@cache
def _generic_terms() -> frozenset[str]:
    return frozenset(lexicon.term(w, lang) for w in _generic() for lang in ("en", "fr"))


def features(
    query: Query,
    content: str,
    kind: str,
    semantic: float | None,
    labels: tuple[str, ...] = (),
    stored: str | None = None,
) -> dict[str, float]:
    """The model's inputs for one memory (see the module docstring). `stored`: the memory's
    `reading`, written with it (read again from its text when missing or stale)."""
    memory_text = " ".join((content, *labels))
    memory_terms, memory_tokens, constrained, people = _read_memory(memory_text, stored)
    matched = query.terms & memory_terms
    names = {n for n in query.names if n in memory_tokens}
    name_terms = {lexicon.term(n, lang) for n in names for lang in ("en", "fr")} | names
    relations = (matched & lexicon.RELATION_WORDS) - name_terms
    rest = matched - relations - name_terms
    generic = rest & _generic_terms()
    specific = rest - generic
    held = memory_terms | memory_tokens
    said = sum(1 for forms in query.keywords if forms & held)
    keywords = said / len(query.keywords) if query.keywords else 0.0
    found = {
        "names": float(len(names)),
        "relations": float(len(relations)),
        "specific": float(len(specific)),
        "generic": float(len(generic)),
        "coverage": len(matched | name_terms & memory_terms) / max(1, len(memory_terms)),
        "link": _link(query, constrained, people, memory_tokens),
        "conversation": float(kind == "conversation" and keywords < 1.0),
        "keywords": keywords,
    }
    if semantic is not None:
        found["semantic"] = semantic
    return found


# The rules a stored reading was made with (lexicon.terms, constrained, people_of): bump it
# when they change, and the readings written before are read again from the text.
READING_VERSION = 2


def reading(content: str, labels: Sequence[str]) -> str:
    """What `features` needs of a memory's text, worked out when the memory is written and
    stored with it (JSON): reading a text costs ~0.1 ms, a search's ten results ~1 ms when
    the server has not read them since it started; the stored form is parsed in a tenth of
    that. With the text's checksum, so that a reading the text no longer matches (a record
    edited by a path that did not write it again) is never used."""
    memory_text = " ".join((content, *labels))
    return json.dumps(
        [READING_VERSION, _checksum(memory_text), *map(sorted, _read_text(memory_text))],
        ensure_ascii=False,
    )


def _checksum(memory_text: str) -> int:
    return zlib.crc32(memory_text.encode("utf-8", "surrogatepass"))


@lru_cache(maxsize=8192)
def _read_memory(
    memory_text: str, stored: str | None = None
) -> tuple[frozenset, frozenset, frozenset, frozenset]:
    """A memory's terms, tokens, constrained domains and the people it is about, the first,
    third and fourth from its stored reading when it matches the text (cached: the same
    memories come back query after query)."""
    read = None
    if stored:
        try:
            version, checksum, *read = json.loads(stored)
        except (ValueError, TypeError):
            version = checksum = None
        if version != READING_VERSION or checksum != _checksum(memory_text) or len(read) != 3:
            read = None
    terms, constrained, people = read if read is not None else _read_text(memory_text)
    tokens = frozenset(text.tokens(memory_text))
    return frozenset(terms), tokens, frozenset(constrained), frozenset(people)


def _read_text(memory_text: str) -> tuple[frozenset, frozenset, frozenset]:
    """What a reading stores: the text's terms, the domains they constrain, its people."""
    terms = frozenset(lexicon.terms(memory_text))
    return (
        terms,
        frozenset(lexicon.constrained(terms)),
        frozenset(lexicon.people_of(memory_text, leading=True)),
    )


def _link(query: Query, constrained: frozenset, people: frozenset, memory_tokens) -> float:
    """1 when the query's life domain is one the memory constrains, for the user or for a
    person the query names (an allergy of "my sister" matters for a meal with her)."""
    if not query.domains & constrained:
        return 0.0
    # A message about the family is about each of its people ("visit family": my sister).
    named = query.terms & people or query.names & memory_tokens or "family" in query.domains
    if people and not named:
        return 0.0
    return 1.0


def score(found: dict[str, float]) -> float:
    """The relevance (0..1) of one memory from its features: the model with vectors when
    there is a `semantic` feature, the text model otherwise; a memory that holds every
    keyword of the query scores at least what the text model gives it."""
    by_text = _logistic(TEXT_WEIGHTS, TEXT_BIAS, found)
    if "semantic" not in found:
        return by_text
    by_both = _logistic(WEIGHTS, BIAS, found)
    return max(by_both, by_text) if found.get("keywords", 0.0) >= 1.0 else by_both


def _logistic(weights: dict[str, float], bias: float, found: dict[str, float]) -> float:
    z = bias + sum(weights[name] * value for name, value in found.items() if name in weights)
    return 1.0 / (1.0 + math.exp(-z))


class Baselines:
    """Each memory vector's mean cosine to the neutral bank (its `semantic` baseline)."""

    def __init__(self) -> None:
        self._bank: np.ndarray | None = None
        self._lock = threading.Lock()

    def bank(self, embedder: Any) -> np.ndarray:
        with self._lock:
            if self._bank is None:
                # Stored beside the model once embedded (ikario_rag.embed): not at every start.
                fixed = getattr(embedder, "fixed_vectors", None)
                self._bank = fixed(BANK) if fixed else embedder.encode(list(BANK))
            return self._bank

    def of(self, embedder: Any, vectors: np.ndarray) -> np.ndarray:
        sims = np.asarray(vectors, dtype=np.float32) @ self.bank(embedder).T
        k = min(BASELINE_NEIGHBOURS, sims.shape[1])
        return np.sort(sims, axis=1)[:, -k:].mean(axis=1)


BASELINES = Baselines()
