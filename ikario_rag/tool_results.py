"""What each MCP tool returns (docs/MEMORY_TOOLS.md, "Tools"), as the tools' return types.

The SDK turns a tool's return annotation into its `outputSchema` and checks the structured
content it sends against it, so a client can rely on these fields. The contract lets fields
be added, never renamed or removed: every type here allows keys it does not name (a client
ignores those it does not know). Values read back from stored records (a category, a kind)
are plain strings: an index may hold values of an older vocabulary.
"""

from typing import Any, Literal, NotRequired

from pydantic import ConfigDict, with_config
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from ikario_rag import contract

OPEN = ConfigDict(extra="allow")

Mode = Literal[contract.MODES]  # type: ignore[valid-type]


@with_config(OPEN)
class Metadata(TypedDict):
    category: str
    kind: str
    tags: list[str]
    concepts: list[str]
    emotions: list[str]
    subjects: list[str]
    date: str
    created_at: str
    expires_at: str | None
    source: str | None


@with_config(OPEN)
class MemoryRecord(TypedDict):
    """A memory record (MEMORY_TOOLS.md, "A memory record"); `history` (its earlier
    versions, oldest first) when asked for: `history_total` of them, this part starting
    at `history_offset` (ikario_rag/replies.py)."""

    id: str
    content: str
    namespace: str
    metadata: Metadata
    history: NotRequired[list[dict[str, Any]]]
    history_total: NotRequired[int]
    history_offset: NotRequired[int]


@with_config(OPEN)
class Added(TypedDict):
    id: str
    status: Literal["created", "updated", "duplicate"]
    replaced_id: NotRequired[str]
    indexed: NotRequired[bool]
    kept_out: NotRequired[list[str]]  # secrets replaced by a placeholder ("password"...)


@with_config(OPEN)
class AddedBatch(TypedDict):
    ids: list[str]
    created: int
    updated: int
    duplicates: int
    results: list[Added]


@with_config(OPEN)
class Found(MemoryRecord):
    relevance_score: float
    distance: float


@with_config(OPEN)
class SearchResults(TypedDict):
    results: list[Found]
    mode_used: Mode


@with_config(OPEN)
class TimelineEntry(TypedDict):
    id: str
    date: str
    content: str
    concepts: list[str]
    evolution: str


@with_config(OPEN)
class Timeline(TypedDict):
    concept: str
    timeline: list[TimelineEntry]


@with_config(OPEN)
class Judged(TypedDict):
    id: str
    content: str
    date: str
    score: float
    reason: str


@with_config(OPEN)
class ConsistencyCheck(TypedDict):
    statement: str
    verdict: Literal[contract.CONSISTENCY_VERDICTS]  # type: ignore[valid-type]
    consistency_score: float
    contradictions: list[Judged]
    supporting: list[Judged]
    undetermined: list[Judged]
    judged_by: Literal["rules"]


@with_config(OPEN)
class Memories(TypedDict):
    memories: list[MemoryRecord]


@with_config(OPEN)
class FoundById(TypedDict):
    memories: list[MemoryRecord]
    missing: list[str]
    left_out: NotRequired[list[str]]  # found, past what one reply holds: ask again


@with_config(OPEN)
class Deleted(TypedDict):
    deleted: bool


@with_config(OPEN)
class DeletedCount(TypedDict):
    deleted: int


@with_config(OPEN)
class Removed(TypedDict):
    id: str
    content: str


@with_config(OPEN)
class Forgotten(TypedDict):
    removed: list[Removed]
    dry_run: bool


@with_config(OPEN)
class Health(TypedDict):
    """Whether the index can serve (memory_stats without a namespace)."""

    status: Literal["ok", "unavailable"]
    saving: str
    embedding_model: NotRequired[str]
    # Null for a token limited to some namespaces: figures of the whole index.
    unindexed: NotRequired[int | None]
    vectors_suspect: NotRequired[bool | None]
    http_sessions: NotRequired[int | None]
    reason: NotRequired[str]
    detail: NotRequired[str]


@with_config(OPEN)
class Stats(TypedDict):
    """Counts of one namespace (with `unindexed` and `saving`), or of all (with `health`);
    with a damaged database the counts are null."""

    namespace: str | None
    total_memories: int | None
    last_save: str | None
    by_category: dict[str, int]
    by_kind: dict[str, int]
    embedding_model: str
    index_bytes: int | None  # null for a token limited to some namespaces
    unindexed: NotRequired[int]
    saving: NotRequired[str]
    health: NotRequired[Health]


@with_config(OPEN)
class Page(TypedDict):
    memories: list[MemoryRecord]
    total: int
    next_offset: NotRequired[int | None]  # where the next page starts; null: none left


@with_config(OPEN)
class Updated(TypedDict):
    id: str
    status: Literal["updated", "unchanged"]
    indexed: NotRequired[bool]
    kept_out: NotRequired[list[str]]  # secrets replaced by a placeholder ("password"...)


@with_config(OPEN)
class RestoredOne(TypedDict):
    id: str | None
    status: Literal["restored", "duplicate", "expired"]
    previous_id: NotRequired[str]
    indexed: NotRequired[bool]
    kept_out: NotRequired[list[str]]  # secrets replaced by a placeholder ("password"...)


@with_config(OPEN)
class RestoredBatch(TypedDict):
    ids: list[str | None]
    restored: int
    duplicates: int
    expired: int
    results: list[RestoredOne]
