"""The MCP tools of docs/MEMORY_TOOLS.md: each annotation is the input schema, each docstring
the description. Vocabularies and limits come from contract.py.

Every tool reaches the Memory through its request's lifespan context (runtime.Runtime),
and its namespace through `_namespace`: a caller over HTTP gets only the namespaces its
token may use (access.py).
A caller's mistake raises InputError; the server (app.py) turns it, and every argument the
annotations reject, into a one-line tool error naming the argument.
"""

from typing import Annotated, Any, Literal, NotRequired

from mcp.server.mcpserver import Context
from pydantic import ConfigDict, Field, StrictBool, StrictFloat, StrictInt, with_config
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from ikario_rag import access, contract, curation, insight, replies, search, text, validate
from ikario_rag import tool_results as results
from ikario_rag.browsing import Browse
from ikario_rag.embed import MODEL_NAME
from ikario_rag.errors import InputError
from ikario_rag.memory import DAMAGED, Memory, index_bytes

# Literal over a tuple is the Literal of its items: the contract's lists are the schema's enums.
Category = Literal[contract.CATEGORIES]  # type: ignore[valid-type]
Kind = Literal[contract.KINDS]  # type: ignore[valid-type]
Mode = Literal[contract.MODES]  # type: ignore[valid-type]
Subcategory = Literal[contract.ALL_SUBCATEGORIES]  # type: ignore[valid-type]

Namespace = Annotated[
    str,
    Field(
        min_length=1,
        max_length=contract.MAX_NAMESPACE,
        description="Isolation unit (the web app passes one per user); a tool never reads "
        "or writes outside the namespace it is given.",
    ),
]
Content = Annotated[
    str,
    Field(
        max_length=2 * contract.MAX_CONTENT,
        description=f"The memory's text, at most {contract.MAX_CONTENT} characters once "
        "<private>...</private> spans are removed (they are never stored).",
    ),
]
Label = Annotated[str, Field(description=f"Cut to {contract.MAX_LABEL} characters.")]
Labels = Annotated[list[Label], Field(max_length=contract.MAX_LIST)]
Kinds = Annotated[list[Kind], Field(max_length=contract.MAX_LIST)]
IsoDate = Annotated[
    str, Field(description="ISO-8601 date or date-time; without a time zone it is UTC.")
]
Results = Annotated[StrictInt, Field(ge=1, le=contract.MAX_RESULTS)]
MemoryId = Annotated[str, Field(min_length=1, max_length=contract.MAX_MEMORY_ID)]
Score = Annotated[StrictFloat, Field(ge=0.0, le=1.0)]


def _text(limit: int, what: str) -> Any:
    return Annotated[
        str, Field(description=f"{what}; at most {limit} characters once private spans go.")
    ]


Query = _text(contract.MAX_QUERY, "What to look for")
Statement = _text(contract.MAX_QUERY, "The statement to check")
Topic = _text(contract.MAX_TOPIC, "The topic whose memories go")
Concept = _text(contract.MAX_TOPIC, "The concept to trace")


@with_config(ConfigDict(extra="forbid"))
class MemoryContext(TypedDict, total=False):
    """What a memory is about and when; every field is optional."""

    category: Category | None
    kind: Kind | None
    tags: Labels | None
    concepts: Labels | None
    emotions: Labels | None
    subjects: Labels | None
    date: Annotated[IsoDate | None, Field(description="When it happened (default: now).")]
    source: Annotated[
        str | None,
        Field(
            max_length=contract.MAX_SOURCE,
            description='Opaque reference returned verbatim ("conversation:12").',
        ),
    ]
    ttl: Annotated[
        str | None,
        Field(description=f"Lifetime such as {', '.join(contract.TTL_EXAMPLES)}; null: forever."),
    ]
    dedup: Annotated[
        StrictBool | None, Field(description="false stores it even if it repeats a memory.")
    ]
    replaces: Annotated[
        str | None,
        Field(
            max_length=contract.MAX_MEMORY_ID,
            description="Id of a memory this one supersedes (a changed fact): it goes into "
            "the new memory's history.",
        ),
    ]
    subcategory: Annotated[
        Subcategory | None,
        Field(
            description="Kind self: " + ", ".join(contract.SUBCATEGORIES["self"]) + "; kind "
            "goal: " + ", ".join(contract.SUBCATEGORIES["goal"]) + ". Kept as one of its tags."
        ),
    ]


@with_config(ConfigDict(extra="forbid"))
class NewItem(TypedDict):
    content: Content
    context: NotRequired[MemoryContext | None]


def _memory(ctx: Context) -> Memory:
    return ctx.request_context.lifespan_context.memory()


def _namespace(ctx: Context, namespace: Any, tool: str) -> str:
    """The namespace checked, and refused unless the caller's token may use it (access.py)."""
    return access.allowed(ctx.request_context.request, namespace, tool)


def add_thought(
    ctx: Context,
    content: Content,
    context: MemoryContext | None = None,
    namespace: Namespace = "default",
) -> results.Added:
    """Store one memory and return {id, status: created|updated|duplicate, replaced_id?}.

    context: category, kind, tags, concepts, emotions, subjects, date (ISO-8601), source,
    ttl ("1h", "7d", "30d"), dedup (bool), replaces (id of a memory it supersedes).
    <private>...</private> spans are removed before anything is stored."""
    ns = _namespace(ctx, namespace, "add_thought")
    item = validate.new_memory(content, context)
    return _with_kept_out(_memory(ctx).add(ns, [item]), [item])[0]


def _with_kept_out(outcome: list[dict], items: list) -> list[dict]:
    """Each result says which secrets its text had replaced by a placeholder (`kept_out`:
    "password", "card number"...), so the caller can tell its user."""
    for result, item in zip(outcome, items, strict=True):
        if item.kept_out:
            result["kept_out"] = list(item.kept_out)
    return outcome


def add_thoughts(
    ctx: Context,
    items: Annotated[list[NewItem], Field(min_length=1, max_length=contract.MAX_BATCH)],
    namespace: Namespace = "default",
) -> results.AddedBatch:
    """Store a batch of memories, each {content, context}; same rules as add_thought.
    Returns {ids, created, updated, duplicates, results} in the order given."""
    ns = _namespace(ctx, namespace, "add_thoughts")
    checked = [
        validate.new_memory(raw.get("content"), raw.get("context"), f"items[{pos}].")
        for pos, raw in enumerate(items)
    ]
    outcome = _with_kept_out(_memory(ctx).add(ns, checked), checked)
    statuses = [r["status"] for r in outcome]
    return {
        "ids": [r["id"] for r in outcome],
        "created": statuses.count("created"),
        "updated": statuses.count("updated"),
        "duplicates": statuses.count("duplicate"),
        "results": outcome,
    }


def search_memories(
    ctx: Context,
    query: Query,
    n_results: Results = 5,
    filter_category: Category | None = None,
    kinds: Kinds | None = None,
    tags: Labels | None = None,
    date_from: IsoDate | None = None,
    date_to: IsoDate | None = None,
    mode: Mode = contract.DEFAULT_MODE,
    namespace: Namespace = "default",
    subjects: Annotated[
        Labels | None,
        Field(
            description="Only memories about one of these (a person, a place, a thing): "
            "labelled so (subjects, tags) or naming it in their text, case and accents aside."
        ),
    ] = None,
    subcategory: Annotated[
        Subcategory | None, Field(description="Only self or goal memories of this subcategory.")
    ] = None,
    recent_days: Annotated[
        StrictInt | None,
        Field(
            ge=1,
            le=contract.MAX_RECENT_DAYS,
            description="A recency window: memories of kinds "
            + ", ".join(contract.EPISODIC_KINDS)
            + " dated earlier than this many days ago are left out (facts, preferences, "
            "self, goals and notes stay whatever their age).",
        ),
    ] = None,
) -> results.SearchResults:
    """Search memories, best first, each with relevance_score (0..1) and distance.
    mode: hybrid (vectors + full text, default), semantic or text. Filters (all optional):
    category, kinds, tags, date_from/date_to, subjects, subcategory, recent_days."""
    ns = _namespace(ctx, namespace, "search_memories")
    q = validate.required_text(query, "query", contract.MAX_QUERY)
    start, end = validate.date_range(date_from, date_to)
    filters = search.Filters(
        category=validate.optional_choice(filter_category, "filter_category", contract.CATEGORIES),
        kinds=validate.string_list(kinds, "kinds", contract.KINDS),
        tags=validate.string_list(tags, "tags"),
        date_from=start,
        date_to=end,
        subjects=validate.string_list(subjects, "subjects"),
        subcategory=validate.optional_choice(
            subcategory, "subcategory", contract.ALL_SUBCATEGORIES
        ),
        recent_from=validate.recent_from(recent_days),
    )
    n = validate.bounded_int(n_results, "n_results")
    found = search.search(
        _memory(ctx), ns, q, n, filters, validate.choice(mode, "mode", contract.MODES)
    )
    return {**found, "results": replies.fitting(found["results"])}


def trace_concept_evolution(
    ctx: Context,
    concept: Concept,
    limit: Results = 10,
    namespace: Namespace = "default",
) -> results.Timeline:
    """Dated timeline (oldest first) of memories about a concept; each entry's
    `evolution` says what changed against the previous one."""
    ns = _namespace(ctx, namespace, "trace_concept_evolution")
    c = validate.required_text(concept, "concept", contract.MAX_TOPIC)
    n = validate.bounded_int(limit, "limit")
    traced = insight.trace_concept_evolution(_memory(ctx), ns, c, n)
    return {**traced, "timeline": replies.fitting(traced["timeline"])}


def check_consistency(
    ctx: Context, statement: Statement, namespace: Namespace = "default"
) -> results.ConsistencyCheck:
    """Does a statement contradict stored memories? Returns a verdict (contradicted,
    unknown, supported, no_conflict), contradictions (with reasons), supporting memories,
    and undetermined ones: about the same thing, but no rule can tell. No LLM involved
    (rules on who it is about, negation, diets, allergies, jobs, places, numbers)."""
    ns = _namespace(ctx, namespace, "check_consistency")
    s = validate.required_text(statement, "statement", contract.MAX_QUERY)
    checked = insight.check_consistency(_memory(ctx), ns, s)
    lists = ("contradictions", "supporting", "undetermined")
    every = replies.previewed([e for name in lists for e in checked[name]])
    for name in lists:  # the same entries, in the same order, maybe cut
        checked[name], every = every[: len(checked[name])], every[len(checked[name]) :]
    return checked


def get_memories(
    ctx: Context,
    ids: Annotated[list[MemoryId], Field(min_length=1, max_length=contract.MAX_IDS)],
    namespace: Namespace = "default",
    with_history: StrictBool = False,
    history_offset: Annotated[
        StrictInt | None,
        Field(
            ge=0,
            le=curation.MAX_HISTORY,
            description="With with_history: each record's history from this version on "
            "(oldest first), as much as one reply holds.",
        ),
    ] = None,
) -> results.FoundById:
    """Fetch memories by id; unknown ids are listed in `missing` (an error if none exist).
    with_history: each record also carries its `history` (earlier versions): its newest
    ones, or from history_offset on; history_total says how many there are. Records past
    what one reply holds are listed in `left_out` (ask for them again)."""
    ns = _namespace(ctx, namespace, "get_memories")
    wanted = validate.id_list(ids)
    if validate.flag(with_history, "with_history"):
        found = [
            replies.history_part(r, history_offset)
            for r in curation.get_with_history(_memory(ctx), ns, wanted)
        ]
    else:
        found = _memory(ctx).get(ns, wanted)
    known = {m["id"] for m in found}
    missing = [i for i in wanted if i not in known]
    if not found:
        shown = ", ".join(validate.shown(i).strip("'") for i in missing[:5])
        raise InputError(f"unknown memory id(s): {shown}")
    sent = replies.fitting(found)
    left_out = [m["id"] for m in found[len(sent) :]]
    return {"memories": sent, "missing": missing, "left_out": left_out}


def get_recent_memories(
    ctx: Context,
    limit: Results = 10,
    kinds: Kinds | None = None,
    namespace: Namespace = "default",
) -> results.Memories:
    """The most recently stored memories, newest first."""
    ns = _namespace(ctx, namespace, "get_recent_memories")
    n = validate.bounded_int(limit, "limit")
    wanted = validate.string_list(kinds, "kinds", contract.KINDS)
    return {"memories": replies.fitting(_memory(ctx).recent(ns, n, wanted))}


def delete_memory(
    ctx: Context,
    id: MemoryId,  # noqa: A002 -- the contract's argument name
    reason: Annotated[str, Field(description="Why; only ever logged.")] = "",
    namespace: Namespace = "default",
) -> results.Deleted:
    """Delete one memory by id; `deleted` is false when no such memory exists."""
    ns = _namespace(ctx, namespace, "delete_memory")
    memory_id = validate.memory_id(id)
    why = validate.reason(reason)
    return {"deleted": _memory(ctx).delete_one(ns, memory_id, why)}


def forget(
    ctx: Context,
    topic: Topic,
    min_score: Score = 0.5,
    dry_run: StrictBool = False,
    namespace: Namespace = "default",
) -> results.Forgotten:
    """Delete every memory about a topic (relevance >= min_score); dry_run only lists them."""
    ns = _namespace(ctx, namespace, "forget")
    t = validate.required_text(topic, "topic", contract.MAX_TOPIC)
    threshold = validate.score(min_score, "min_score")
    forgotten = insight.forget(_memory(ctx), ns, t, threshold, validate.flag(dry_run, "dry_run"))
    return {**forgotten, "removed": replies.previewed(forgotten["removed"])}


def memory_stats(ctx: Context, namespace: Namespace | None = None) -> results.Stats:
    """Counts by category and kind, last save, model and index size. Without a namespace
    (operators only): all namespaces (those the caller's token may use), and `health` says
    whether the index can serve."""
    runtime = ctx.request_context.lifespan_context
    grant = access.grant_of(ctx.request_context.request)
    # A token limited to some namespaces learns nothing of the others: not the whole
    # index's size, nor how many sessions or pending vectors it holds (all null).
    limited = grant is not None and not grant.everything
    whole = {"index_bytes": None} if limited else {}
    if namespace is not None:
        ns = _namespace(ctx, namespace, "memory_stats")
        # "saving": "ok" or "fails: <why>" (runtime.saving): the app's indicator says it.
        return {"namespace": ns, **_memory(ctx).stats(ns), "saving": runtime.saving(), **whole}
    health = runtime.health()
    if limited:
        health = {**health, **dict.fromkeys(("http_sessions", "unindexed", "vectors_suspect"))}
    if health["status"] != "ok" and health.get("reason") == DAMAGED:
        # No counts to give; still an answer, so that staff see why.
        return {
            "namespace": None,
            "total_memories": None,
            "last_save": None,
            "by_category": {},
            "by_kind": {},
            "embedding_model": MODEL_NAME,
            "index_bytes": index_bytes(runtime.settings.index_dir),
            "health": health,
            **whole,
        }
    within = None if grant is None or grant.everything else (grant.names, grant.prefixes)
    return {"namespace": None, **runtime.memory().stats(None, within), "health": health, **whole}


# -- the web app's memory page (ikario_rag/curation.py): browse, edit, restore, reset -----

Offset = Annotated[StrictInt, Field(ge=0, le=contract.MAX_OFFSET)]
SourcePrefix = Annotated[
    str,
    Field(max_length=contract.MAX_SOURCE, description="Only memories whose source starts so."),
]


@with_config(ConfigDict(extra="forbid"))
class RestoredMetadata(TypedDict, total=False):
    """A record's metadata as get_memories returns it."""

    category: Category | None
    kind: Kind | None
    tags: Labels | None
    concepts: Labels | None
    emotions: Labels | None
    subjects: Labels | None
    date: IsoDate | None
    created_at: IsoDate | None
    expires_at: IsoDate | None
    source: Annotated[str | None, Field(max_length=contract.MAX_SOURCE)]


@with_config(ConfigDict(extra="forbid"))
class RestoredRecord(TypedDict):
    """A record as list_memories returns it (an export), or as it was before a delete."""

    content: Content
    id: NotRequired[MemoryId | None]
    namespace: NotRequired[Annotated[str | None, Field(description="Ignored: the target's.")]]
    metadata: NotRequired[RestoredMetadata | None]
    history: NotRequired[
        Annotated[list[dict[str, Any]], Field(max_length=curation.MAX_HISTORY)] | None
    ]
    # Which part of the history a reply carried (ikario_rag/replies.py): ignored.
    history_total: NotRequired[StrictInt | None]
    history_offset: NotRequired[StrictInt | None]


def list_memories(
    ctx: Context,
    offset: Offset = 0,
    limit: Results = 20,
    kinds: Kinds | None = None,
    category: Category | None = None,
    tags: Labels | None = None,
    date_from: IsoDate | None = None,
    date_to: IsoDate | None = None,
    source_prefix: SourcePrefix | None = None,
    namespace: Namespace = "default",
) -> results.Page:
    """Browse memories newest first (by when they were stored), a page at a time:
    {memories: [record + history], total, next_offset}. A page holds at most `limit`
    records and what one reply holds: the next page starts at `next_offset` (null: none
    left); each record's history is its newest versions (history_total: how many there
    are; get_memories' history_offset reads the rest). Filters: kinds, category, tags
    (any, case and accents aside), date_from/date_to (on `date`), source_prefix."""
    ns = _namespace(ctx, namespace, "list_memories")
    start, end = validate.date_range(date_from, date_to)
    filters = Browse(
        kinds=validate.string_list(kinds, "kinds", contract.KINDS),
        category=validate.optional_choice(category, "category", contract.CATEGORIES),
        tags=validate.string_list(tags, "tags"),
        date_from_ts=start.timestamp() if start else None,
        date_to_ts=end.timestamp() if end else None,
        source_prefix=curation.source_prefix(source_prefix),
    )
    first = validate.bounded_int(offset, "offset", 0, contract.MAX_OFFSET)
    return curation.browse(_memory(ctx), ns, filters, first, validate.bounded_int(limit, "limit"))


def update_memory(
    ctx: Context,
    id: MemoryId,  # noqa: A002 -- the contract's argument name
    content: Content | None = None,
    category: Category | None = None,
    tags: Labels | None = None,
    namespace: Namespace = "default",
) -> results.Updated:
    """Edit a memory in place: content, category and/or tags (what is not given stays).
    Same id, re-indexed; the previous version goes into the record's history.
    Returns {id, status: updated|unchanged, indexed?}; an unknown id is an error."""
    ns = _namespace(ctx, namespace, "update_memory")
    memory_id = validate.memory_id(id)
    text_given = None
    kept: list[str] = []
    values: tuple[str, ...] = ()
    if content is not None:
        item = validate.new_memory(content, None)
        text_given, kept = item.content, item.kept_out
        values = validate.kept_out_of(text.clean(content))[2]  # to drop tags repeating one
    labels = None
    if tags is not None:
        labels = validate.stored_labels(validate.string_list(tags, "tags"), values, kept)
    result = curation.update(
        _memory(ctx),
        ns,
        memory_id,
        content=text_given,
        category=validate.optional_choice(category, "category", contract.CATEGORIES),
        tags=labels,
    )
    if kept:
        result["kept_out"] = kept
    return result


def restore_memories(
    ctx: Context,
    memories: Annotated[list[RestoredRecord], Field(min_length=1, max_length=contract.MAX_BATCH)],
    namespace: Namespace = "default",
) -> results.RestoredBatch:
    """Put memories back as list_memories returns them (an export, or one just deleted):
    each keeps its id when no memory has it, its dates, labels, source and history. One
    whose text the namespace already holds is skipped (restoring twice adds nothing).
    Returns {ids, restored, duplicates, expired, results} in the order given."""
    ns = _namespace(ctx, namespace, "restore_memories")
    items = [
        curation.restored_item(dict(raw), f"memories[{pos}].") for pos, raw in enumerate(memories)
    ]
    results = curation.restore(_memory(ctx), ns, items)
    statuses = [r["status"] for r in results]
    return {
        "ids": [r["id"] for r in results],
        "restored": statuses.count("restored"),
        "duplicates": statuses.count("duplicate"),
        "expired": statuses.count("expired"),
        "results": results,
    }


def forget_all(
    ctx: Context, confirm: str, namespace: Namespace = "default"
) -> results.DeletedCount:
    """Delete every memory of the namespace, for good. `confirm` must repeat the
    namespace's name. Returns {deleted: n}."""
    ns = _namespace(ctx, namespace, "forget_all")
    if not isinstance(confirm, str) or confirm.strip() != ns:
        raise InputError("confirm must repeat the namespace's name")
    return {"deleted": curation.forget_all(_memory(ctx), ns)}


TOOLS = (
    add_thought,
    add_thoughts,
    search_memories,
    trace_concept_evolution,
    check_consistency,
    get_memories,
    get_recent_memories,
    delete_memory,
    forget,
    memory_stats,
    list_memories,
    update_memory,
    restore_memories,
    forget_all,
)
