"""Hybrid search: MiniLM nearest neighbours and FTS5/BM25, fused by weighted reciprocal rank.

The ranking uses the fused ranks (tuned on LoCoMo: docs/BENCHMARKS.md). Each result's
`relevance_score` is separate: the probability that the memory is what the query is
about (ikario_rag/relevance.py), the same meaning in every mode and for every query
length, so that 0.5 separates relevant from not. A query that says nothing (no content
word, or one word repeated: "test test test") matches nothing.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

import numpy as np

from ikario_rag import contract, relevance, text
from ikario_rag.errors import MemoryUnavailable
from ikario_rag.records import CANDIDATE_COLUMNS, record_of, stored_reading

log = logging.getLogger("ikario_rag.search")

_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="ikario-search")


@dataclass
class Filters:
    category: str | None = None
    kinds: Sequence[str] = ()
    tags: Sequence[str] = ()
    date_from: datetime | None = None
    date_to: datetime | None = None
    # Who or what the memory is about: one of its subjects or tags, or a word of its text.
    subjects: Sequence[str] = ()
    # A self or goal memory's sub-category (contract.SUBCATEGORIES), kept as one of its tags.
    subcategory: str | None = None
    # The recency window's start: memories of contract.EPISODIC_KINDS dated before it go.
    recent_from: datetime | None = None

    def vector_where(self) -> dict[str, Any] | None:
        clauses: list[dict[str, Any]] = []
        if self.category:
            clauses.append({"category": self.category})
        if self.kinds:
            clauses.append({"kind": {"$in": list(self.kinds)}})
        if self.subcategory:
            kinds = [
                k for k, allowed in contract.SUBCATEGORIES.items() if self.subcategory in allowed
            ]
            clauses.append({"kind": {"$in": kinds}})
        if self.date_from:
            clauses.append({"date_ts": {"$gte": self.date_from.timestamp()}})
        if self.date_to:
            clauses.append({"date_ts": {"$lte": self.date_to.timestamp()}})
        if self.recent_from:
            episodic = list(contract.EPISODIC_KINDS)
            recent = {"date_ts": {"$gte": self.recent_from.timestamp()}}
            clauses.append({"$or": [{"kind": {"$nin": episodic}}, recent]})
        if not clauses:
            return None
        return clauses[0] if len(clauses) == 1 else {"$and": clauses}

    def keeps(self, row: Any) -> bool:
        if self.category and row["category"] != self.category:
            return False
        if self.kinds and row["kind"] not in self.kinds:
            return False
        if self.date_from and row["date_ts"] < self.date_from.timestamp():
            return False
        if self.date_to and row["date_ts"] > self.date_to.timestamp():
            return False
        if (
            self.recent_from
            and row["kind"] in contract.EPISODIC_KINDS
            and row["date_ts"] < self.recent_from.timestamp()
        ):
            return False
        tags = None
        if self.tags or self.subcategory or self.subjects:
            tags = {text.fold(t) for t in _json_list(row["tags"])}
        if self.tags and not {text.fold(t) for t in self.tags} & tags:
            return False
        if self.subcategory and not (
            self.subcategory in contract.SUBCATEGORIES.get(row["kind"], ())
            and text.fold(self.subcategory) in tags
        ):
            return False
        return not self.subjects or self._about(row, tags)

    def _about(self, row: Any, tags: set[str]) -> bool:
        """The row is about one of `subjects`: labelled so, or naming it in its text."""
        wanted = {text.fold(s) for s in self.subjects}
        if wanted & (tags | {text.fold(s) for s in _json_list(row["subjects"])}):
            return True
        content = text.fold(row["content"])
        return any(re.search(rf"(?<!\w){re.escape(w)}(?!\w)", content) for w in wanted)

    @property
    def strict(self) -> bool:
        """Filters Chroma cannot apply itself, so the candidate pool must be larger."""
        return bool(self.tags or self.subjects or self.subcategory)

    @property
    def columns(self) -> str:
        """What a candidate is read with: what ranking needs, and what these filters read."""
        return CANDIDATE_COLUMNS + (", subjects, content" if self.subjects else "")


@dataclass
class Tuning:
    """Knobs of the fusion, kept together so the LoCoMo harness can sweep them.

    Defaults chosen on LoCoMo (bench/_tune_locomo.py): candidate pool 60 per side, RRF k 5,
    equal weights, neighbour boost 0.6, named-date boost 1.0 with a 2-day slack. When the
    query is about one speaker of the best conversation turns (it names one, or two apart,
    the first): its vector side searched again with that name said as "I", and the other
    speakers' turns among the 30 best scored x0.4 (every fold of a leave-one-conversation-out
    cross-validation chose these rules: `_tune_locomo.py --grid final --folds`).
    """

    pool: int = 60
    rrf_k: float = 5.0
    semantic_weight: float = 1.0
    text_weight: float = 1.0
    neighbours: float = 0.6
    date_boost: float = 1.0
    date_slack_days: float = 2.0
    speaker: float = 0.4
    speaker_top: int = 30
    unnamed_vector: bool = True
    unnamed_as: str = "I"
    first_named: bool = True


DEFAULT_TUNING = Tuning()


def query_words(query: str) -> list[str]:
    return list(dict.fromkeys(text.content_words(query)))


def search(
    memory: Any,
    namespace: str,
    query: str,
    n_results: int,
    filters: Filters,
    mode: str,
    tuning: Tuning = DEFAULT_TUNING,
) -> dict[str, Any]:
    """The search_memories result: {results: [record + relevance_score + distance], mode_used}."""
    asked = relevance.read_query(query)
    if asked.meaningless:
        return {"results": [], "mode_used": mode}
    now_ts = text.now().timestamp()
    pool = max(tuning.pool, n_results * 3)
    if filters.strict:
        pool *= 5
    words = query_words(query)
    cosines: dict[str, float] = {}
    semantic_ranked: list[str] = []
    mode_used = mode
    vector = None
    unnamed_hits: dict[str, list[tuple[str, float]]] = {}
    settled = 0
    if mode in ("hybrid", "semantic"):
        # Read-your-writes (vectors are written behind adds). Before the text side starts:
        # when one connection served every read, this lookup waiting behind the text
        # search's SQL made hybrid ~7 % slower; the order is kept (reads now run on reader
        # connections of their own, ikario_rag/database.py, but share the two cores).
        settled = memory.settle(namespace)
        # The forms the speaker-aware ranking may want later, embedded and looked up with the
        # query: one embedding call and one Chroma query instead of two each.
        forms = _unnamed_forms(memory, namespace, query, tuning)
    # The text side runs while the query is embedded (onnxruntime releases the GIL).
    text_future = None
    if mode == "hybrid":
        text_future = _POOL.submit(memory.store.text_search, namespace, words, pool, now_ts)
    if mode in ("hybrid", "semantic"):
        try:
            memory.wait_ready()
            if settled is None:  # the model was still loading a moment ago (a cold start)
                memory.settle(namespace)
            vectors = memory.embedder.query_vectors(
                [query, *forms.values()], quantised=memory.quantised
            )
            vector = vectors[0]
            found = memory.vectors.query_many(
                namespace, np.stack(vectors), pool, filters.vector_where()
            )
            hits = found[0]
            unnamed_hits = dict(zip(forms, found[1:], strict=True))
        except Exception as exc:
            if mode == "semantic":
                log.exception("semantic search failed")
                raise MemoryUnavailable("semantic search is down; text search still works") from exc
            # The vector side is down: text search still answers (claude-mem's fallback).
            log.exception("vector search failed; answering with text search")
            mode_used, hits, vector = "text", [], None
        for memory_id, distance in hits:
            cosines[memory_id] = 1.0 - float(distance)
            semantic_ranked.append(memory_id)
    text_hits: list[tuple[str, float]] = []
    if text_future is not None:
        text_hits = text_future.result()
    elif mode_used == "text":
        text_hits = memory.store.text_search(namespace, words, pool, now_ts)
    # Every read from here on in one snapshot: the candidates, their neighbours and the
    # results' records agree (a record deleted meanwhile is in all of them or none), and
    # the ~5 statements share one read transaction.
    with memory.store.snapshot():
        candidates = list(dict.fromkeys(semantic_ranked + [i for i, _ in text_hits]))
        rows = memory.store.by_ids(namespace, candidates, now_ts, filters.columns)
        rows = {i: r for i, r in rows.items() if filters.keeps(r)}
        semantic_hits = [(i, cosines[i]) for i in semantic_ranked if i in rows]
        # bm25() is negative, lower is better: flip it so higher is better on both sides.
        text_hits = [(i, -score) for i, score in text_hits if i in rows]
        scores = fuse(semantic_hits, text_hits, tuning)
        speakers = Speakers()
        named = speakers.named(query, rows, scores, tuning) if tuning.speaker < 1.0 else None
        if named and vector is not None and tuning.unnamed_vector:
            again = _semantic_without_name(
                memory,
                namespace,
                query,
                named,
                pool,
                filters,
                now_ts,
                rows,
                tuning,
                unnamed_hits.get(named),
            )
            if again is not None:
                scores = fuse(again, text_hits, tuning)
        if tuning.neighbours and scores:
            _boost_neighbours(memory, namespace, rows, scores, tuning, now_ts, filters)
        if tuning.date_boost and scores:
            _boost_named_dates(query, rows, scores, tuning)
        if named:
            speakers.prefer(named, rows, scores, tuning)
        best = sorted(scores, key=lambda i: -scores[i])[:n_results]
        baselines: dict[str, float] = {}
        if vector is not None and best:
            # The vectors of the results: their baselines, and the cosines text search found.
            held = memory.vectors.vectors(namespace, best)
            for memory_id, emb in held.items():
                cosines.setdefault(memory_id, float(np.dot(emb, vector)))
            if held:
                ids = list(held)
                found = relevance.BASELINES.of(memory.embedder, np.stack([held[i] for i in ids]))
                baselines = dict(zip(ids, (float(b) for b in found), strict=True))
        full = memory.store.by_ids(namespace, best, now_ts)
        results = []
        for memory_id in best:
            row = full[memory_id]
            record = record_of(row)
            cosine = cosines.get(memory_id)
            semantic = None
            if mode_used != "text" and cosine is not None and memory_id in baselines:
                semantic = cosine - baselines[memory_id]
            meta = record["metadata"]
            labels = (*meta["subjects"], *meta["concepts"], *meta["tags"])
            found = relevance.features(
                asked, row["content"], row["kind"], semantic, labels, stored_reading(row)
            )
            record["relevance_score"] = round(relevance.score(found), 4)
            # Cosine distance; in text mode (no vectors) 1 - relevance stands in for it.
            record["distance"] = round(
                1.0 - cosine if cosine is not None else 1.0 - record["relevance_score"], 4
            )
            results.append(record)
    return {"results": results, "mode_used": mode_used}


def fuse(
    semantic_hits: list[tuple[str, float]],
    text_hits: list[tuple[str, float]],
    tuning: Tuning,
) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum over both rankings of weight / (k + rank).

    A small k (5) lets the first few places of either ranking dominate; on LoCoMo, k 5 beat
    the usual 60 by 0.09 recall@10, and z-score fusion of the raw scores did no better.
    """
    scores: dict[str, float] = {}
    for weight, hits in ((tuning.semantic_weight, semantic_hits), (tuning.text_weight, text_hits)):
        for rank, (memory_id, _) in enumerate(hits, start=1):
            scores[memory_id] = scores.get(memory_id, 0.0) + weight / (tuning.rrf_k + rank)
    return scores


def _boost_neighbours(memory, namespace, rows, scores, tuning, now_ts, filters) -> None:
    """A strong hit lifts the memories stored just before and after it in the same session.

    Same session = same namespace, kind and `date`; before/after = the previous and next
    record of that session in storage order. Each of the 30 best candidates passes
    `neighbours` x (its score above the pool's lowest) to its neighbours: evidence often
    spans consecutive turns (+0.02 recall@10 on LoCoMo).
    """
    alpha = tuning.neighbours
    top = sorted(scores, key=lambda i: -scores[i])[:30]
    by_rowid = {rows[i]["rowid"]: i for i in top}
    found = memory.store.neighbours(namespace, [rows[i] for i in top], now_ts, filters.columns)
    base = dict(scores)
    low = min(base.values())
    for source_rowid, row in found:
        if not filters.keeps(row):
            continue
        source = by_rowid[source_rowid]
        rows.setdefault(row["id"], row)
        scores[row["id"]] = scores.get(row["id"], low) + alpha * (base[source] - low)


def _boost_named_dates(query, rows, scores, tuning) -> None:
    """A query naming a day or month ("on 13 October, 2023") lifts memories dated then.

    The window runs from the day before to `date_slack_days` after the named period (what
    happened on a date is often told a day or two later). Each candidate dated inside it gains
    `date_boost` x the best score, so with the default 1.0 the dated candidates come first,
    in their own order: the date is the most specific thing the query says (on LoCoMo, where 79
    of the 760 questions name a day or month, it lifts recall@10 and recall@5 by ~0.02). A bare
    month or year is not used (too vague to rank by).
    """
    day = 86400.0
    windows = [
        (start.timestamp() - day, end.timestamp() + tuning.date_slack_days * day)
        for start, end in text.named_dates(query)
    ]
    if not windows:
        return
    top = max(scores.values())
    low = min(scores.values())
    for memory_id, row in rows.items():
        ts = row["date_ts"]
        if ts is not None and any(a <= ts < b for a, b in windows):
            scores[memory_id] = scores.get(memory_id, low) + tuning.date_boost * top


# Words saying a question is about several speakers at once ("both", "Ana and Ben").
_TOGETHER = frozenset({"both", "together", "each", "all", "tous", "toutes", "ensemble", "deux"})
_JOINED = frozenset({"and", "or", "nor", "et", "ou"})


class Speakers:
    """The speakers of the candidate conversation turns ("Ana: ..."), from their openings.

    A query naming one of them ("What did Ana paint?") is about what that person said: on
    LoCoMo 932 of the 969 evidence turns of questions naming one speaker are that speaker's,
    while the turns indexed with their neighbours pull the other speaker's replies up. The
    app's saved exchanges all start with the user's label: one speaker, nothing changes.
    """

    def __init__(self) -> None:
        self.of: dict[str, str | None] = {}

    def _read(self, ids: list[str], rows) -> None:
        for memory_id in ids:
            if memory_id in self.of or memory_id not in rows:
                continue
            row = rows[memory_id]
            turn = row["kind"] == "conversation"
            self.of[memory_id] = text.speaker_of(row["opening"]) if turn else None

    def named(self, query, rows, scores, tuning) -> str | None:
        """The speaker of the best turns the query is about: the one it names, or of two
        named apart ("What did Ana tell Ben?"), the first (LoCoMo recall@5 +0.01); None when
        it names none, or several together ("Ana and Ben", "both")."""
        top = sorted(scores, key=lambda i: -scores[i])[: tuning.speaker_top]
        self._read(top, rows)
        known = {self.of[i] for i in top if self.of.get(i)}
        if len(known) < 2:
            return None
        said = text.tokens(query)
        parts = {who: text.tokens(who) for who in known}
        named = [who for who in known if parts[who] and set(parts[who]) <= set(said)]
        if len(named) == 1:
            return named[0]
        if len(named) < 2 or not tuning.first_named or _TOGETHER & set(said):
            return None
        # "What did Ana tell Ben?": the speaker named first is the one asked about.
        first = {who: said.index(parts[who][0]) for who in named}
        ordered = sorted(named, key=first.get)
        gap = said[first[ordered[0]] + len(parts[ordered[0]]) : first[ordered[1]]]
        if gap and all(w in _JOINED for w in gap):
            return None  # "Ana and Ben": both
        return ordered[0]

    def prefer(self, named, rows, scores, tuning) -> None:
        """The other speakers' turns among the best `speaker_top` scored x `speaker`.

        After the neighbour and date boosts, so that a reply still lifts the turn it answers;
        x0.4 is LoCoMo's best factor (recall@10 +0.04, recall@5 +0.07)."""
        top = sorted(scores, key=lambda i: -scores[i])[: tuning.speaker_top]
        self._read(top, rows)
        for memory_id in top:
            who = self.of.get(memory_id)
            if who and who != named:
                scores[memory_id] *= tuning.speaker


def _unnamed_forms(memory, namespace: str, query: str, tuning: Tuning) -> dict[str, str]:
    """Speaker -> the query with that speaker said as `unnamed_as`, for the (at most two,
    first named first) known speakers of the namespace that the query names: the ones
    `Speakers.named` can pick. A guess made before any ranking exists; a speaker it misses
    costs `_semantic_without_name` one more embedding and lookup, nothing else."""
    if tuning.speaker >= 1.0 or not tuning.unnamed_vector:
        return {}
    said = text.tokens(query)
    words = set(said)
    by_first = _by_first_word(memory.store.speakers(namespace))
    named = sorted(
        (said.index(first), who)
        for first in words & by_first.keys()
        for who, parts in by_first[first]
        if parts <= words
    )
    return {who: unnamed(query, who, tuning.unnamed_as) for _, who in named[:2]}


@lru_cache(maxsize=64)
def _by_first_word(known: frozenset[str]) -> dict[str, list[tuple[str, frozenset[str]]]]:
    """Speakers (and their words) by their first word: a query is checked against its own
    words only, not against every speaker of a namespace of many conversations."""
    found: dict[str, list[tuple[str, frozenset[str]]]] = {}
    for who in known:
        parts = text.tokens(who)
        if parts:
            found.setdefault(parts[0], []).append((who, frozenset(parts)))
    return found


def _semantic_without_name(
    memory, namespace, query, named, pool, filters, now_ts, rows, tuning, hits=None
):
    """The vector ranking of the query with the speaker it names said in the first person
    ("What does Ana paint?" -> "What does I paint?"), new candidates added to `rows`; None
    when the vector side fails this time.

    A name in the query pulls up the turns where the other speaker calls that person by
    name and the short turns ("Ana: See you!") the name fills, not what that person said.
    On LoCoMo, with the speaker preference, recall@10 gains ~0.015, multi-hop and open-domain
    questions most; "they" or "someone" as the stand-in do as well, removing the name worse.
    `hits`: that ranking when it was looked up with the query (`_unnamed_forms`), else one
    more query embedding and vector lookup here.
    """
    try:
        if hits is None:
            vector = memory.embedder.query_vector(
                unnamed(query, named, tuning.unnamed_as), quantised=memory.quantised
            )
            hits = memory.vectors.query(namespace, vector, pool, filters.vector_where())
    except Exception:
        # The first vector search worked a moment ago: keep its ranking rather than fail.
        log.exception("second vector search failed; keeping the first ranking")
        return None
    new = [i for i, _ in hits if i not in rows]
    if new:
        found = memory.store.by_ids(namespace, new, now_ts, filters.columns)
        rows.update({i: r for i, r in found.items() if filters.keeps(r)})
    return [(i, 1.0 - float(d)) for i, d in hits if i in rows]


def unnamed(query: str, named: str, stand_in: str) -> str:
    """The query with a (folded) name replaced by `stand_in`, "Ana's" by its possessive.
    Folded like the name: the embedding model's tokenizer drops case and accents anyway."""
    words = r"\s+".join(re.escape(w) for w in named.split())
    owner = {"I": "my", "they": "their", "": ""}.get(stand_in, f"{stand_in}'s")
    out = re.sub(rf"\b{words}'s\b", owner, text.fold(query))
    return " ".join(re.sub(rf"\b{words}\b", stand_in, out).split())


def _json_list(value: str) -> list[str]:
    return json.loads(value) if value else []
