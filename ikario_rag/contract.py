"""The memory contract's fixed vocabulary and limits, in one place.

The MCP server checks its arguments against these, and the web app (memory/) imports
them to check user and model input once at its own edge with the same limits. Pure data:
no imports, so any caller (the Django app, benchmarks, other MCP clients' tests) can read
it without pulling in the server.
"""

CATEGORIES = ("fondatrice", "thematique", "contextuelle")
DEFAULT_CATEGORY = "contextuelle"
KINDS = (
    "thought",
    "conversation",
    "fact",
    "observation",
    "summary",
    "self",
    "goal",
    "note",
    "preference",
)
DEFAULT_KIND = "thought"
# Kinds whose near-duplicates replace each other (a fact said again in other words is the
# same fact, so it updates the stored one); other kinds dedup on exact text.
DEDUP_KINDS = ("fact", "self", "goal", "preference")
# The sub-categories of Ikario's memories of itself and of its goals (what it knows of
# itself, a goal's horizon): set with
# `context.subcategory`, kept as one of the memory's tags (so every tag filter finds it) and
# returned as `metadata.subcategory`; search_memories' `subcategory` filters on it.
SUBCATEGORIES = {
    "self": ("capability", "limitation", "value", "preference", "context", "relation"),
    "goal": ("short_term", "long_term"),
}
ALL_SUBCATEGORIES = tuple(dict.fromkeys(s for kind in SUBCATEGORIES.values() for s in kind))
# What happened, rather than what holds: search_memories' `recent_days` (a recency window)
# leaves out these kinds' memories dated earlier; the others stay whatever their age (a
# fact, a preference, a note ends by its ttl, not by growing old).
EPISODIC_KINDS = ("conversation", "summary", "thought", "observation")
MAX_RECENT_DAYS = 36_500
MODES = ("hybrid", "semantic", "text")
DEFAULT_MODE = "hybrid"
# search_memories' relevance_score is the probability that a memory is what the query is
# about: at or above this, more likely relevant than not (auto-recall's default min_score,
# and what the sidebar lists).
RELEVANT = 0.5
TTL_EXAMPLES = ("1h", "7d", "30d")
# A lifetime (`ttl`): a whole number (1 to 5 digits) of minutes, hours, days or weeks.
TTL_UNITS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
TTL_RULE = "a duration like '30m', '1h', '1d', '7d' or '2w'"
CONTEXT_LIST_FIELDS = ("tags", "concepts", "emotions", "subjects")
# `replaces`: the id of a memory of the same namespace that the new one supersedes (a
# changed fact): the old one is removed and becomes the first entry of the new one's history.
CONTEXT_FIELDS = (
    "category",
    "kind",
    *CONTEXT_LIST_FIELDS,
    "date",
    "source",
    "ttl",
    "dedup",
    "replaces",
    "subcategory",
)

# Characters, after <private> spans are removed and white space is folded.
MAX_CONTENT = 20_000  # one memory; longer texts (a whole conversation) are split by callers
MAX_QUERY = 2_000  # search query, consistency statement
MAX_TOPIC = 500  # concept to trace, topic to forget
MAX_LABEL = 200  # one tag, concept, emotion or subject
MAX_SOURCE = 500
MAX_REASON = 500
MAX_NAMESPACE = 200
MAX_MEMORY_ID = 200
# Counts.
MAX_LIST = 50  # labels in one list
MAX_RESULTS = 100  # n_results, limit
MAX_IDS = 100  # ids in one get_memories call
MAX_BATCH = 1000  # items in one add_thoughts or restore_memories call
MAX_OFFSET = 1_000_000_000  # where list_memories may start


# check_consistency's verdicts (the web app may re-judge its pairs with a model and says
# so in `judged_by`).
CONSISTENCY_VERDICTS = ("contradicted", "unknown", "supported", "no_conflict")


def consistency_summary(contradictions: list, supporting: list, undetermined: list) -> dict:
    """The verdict and consistency_score of a check from its lists. contradicted: 1 - the
    highest contradiction score (at most 0.5); unknown (no contradiction, and a memory about
    it that could not be judged): 0.5; supported or no_conflict (nothing contradicts,
    nothing is undetermined): 1.0."""
    if contradictions:
        score = 1.0 - max(float(c.get("score") or 0.5) for c in contradictions)
        return {"verdict": "contradicted", "consistency_score": round(min(score, 0.5), 4)}
    if undetermined:
        return {"verdict": "unknown", "consistency_score": 0.5}
    return {"verdict": "supported" if supporting else "no_conflict", "consistency_score": 1.0}


def ttl_seconds(value: str) -> int:
    """'1d' -> 86400: the one rule for a lifetime, the server's and the web app's.
    Raises ValueError for anything else (no unit, zero, a sign, a fraction, other digits)."""
    text = value.strip()
    number, unit = text[:-1].strip(), text[-1:].lower()
    if unit not in TTL_UNITS or not (number.isascii() and number.isdigit()) or len(number) > 5:
        raise ValueError(f"ttl {value!r} is not {TTL_RULE}")
    if int(number) == 0:
        raise ValueError(f"ttl {value!r} is not {TTL_RULE}")
    return int(number) * TTL_UNITS[unit]
