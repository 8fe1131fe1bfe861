"""A memory record's row: its columns as SQLite keeps them, as the tools return them
(docs/MEMORY_TOOLS.md, "A memory record"), and the row an add or a restore writes.

Pure functions over rows, no connection: the store's queries and the tools share them.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from ikario_rag import relevance, secrets, text

LIST_FIELDS = ("tags", "concepts", "emotions", "subjects")
# The labels a search reads with a memory's content (relevance.features), in its order.
READ_LABELS = ("subjects", "concepts", "tags")
# The columns a record's vector and its metadata in Chroma are made of.
INDEX_STATE = ("search_text", "kind", "category", "date_ts")
# What ranking and filtering need of a candidate; full rows are read for the final results.
# The opening of a record up to the colon after a speaker's name and the character after
# it: all that text.speaker_of reads (a name is at most 81 characters).
OPENING = "substr(content, 1, instr(substr(content, 1, 100), ':') + 1)"
# What a search ranks and filters candidates by, the speaker rules' openings included (read
# with the candidates: two lookups of the best turns' content fewer per search).
CANDIDATE_COLUMNS = (
    f"id, rowid, namespace, category, kind, tags, date_ts, expires_ts, {OPENING} AS opening"
)


def index_state(row: sqlite3.Row) -> tuple[Any, ...]:
    return tuple(row[name] for name in INDEX_STATE)


def record_of(row: sqlite3.Row) -> dict[str, Any]:
    """A row as the tools return it (MEMORY_TOOLS.md, "A memory record")."""
    return {
        "id": row["id"],
        "content": row["content"],
        "namespace": row["namespace"],
        "metadata": {
            "category": row["category"],
            "kind": row["kind"],
            **{name: json.loads(row[name]) for name in LIST_FIELDS},
            "date": row["date"],
            "created_at": row["created_at"],
            "expires_at": row["expires_at"],
            "source": row["source"],
        },
    }


def full_record(row: sqlite3.Row) -> dict[str, Any]:
    """A record with its `history` (earlier versions, oldest first), as list_memories
    returns it and restore_memories takes it back."""
    return {**record_of(row), "history": json.loads(row["history"])}


def memory_row(
    item: Any,
    *,
    id: str,
    namespace: str,
    search_text: str,
    date: datetime,
    created: datetime,
    created_ts: float,
    expires: datetime | None,
    content_hash: str,
    history: list[dict[str, Any]],
    has_next: bool,
) -> dict[str, Any]:
    """The row of a memory whose content and labels are `item`'s (a validated new memory
    or a restored record): one place for what add_thought and restore both write."""
    return new_row(
        id=id,
        namespace=namespace,
        content=item.content,
        search_text=search_text,
        category=item.category,
        kind=item.kind,
        tags=item.tags,
        concepts=item.concepts,
        emotions=item.emotions,
        subjects=item.subjects,
        date=text.iso(date),
        date_ts=date.timestamp(),
        created_at=text.iso(created),
        created_ts=created_ts,
        expires_at=text.iso(expires) if expires else None,
        expires_ts=expires.timestamp() if expires else None,
        source=item.source,
        content_hash=content_hash,
        history=history,
        has_next=has_next,
    )


def reading_of(content: str, *, subjects=(), concepts=(), tags=()) -> str:
    """The record's `reading` (relevance.reading), of its text as a search reads it."""
    return relevance.reading(content, (*subjects, *concepts, *tags))


def stored_reading(row: sqlite3.Row) -> str | None:
    """A row's reading; None when it has none, or its index has no such column."""
    try:
        return row["reading"]
    except IndexError:
        return None


def new_row(**fields: Any) -> dict[str, Any]:
    """A row dict for `Store.insert`, list fields JSON-encoded, its reading worked out."""
    row = dict(fields)
    if row.get("reading") is None:
        labels = {name: row.get(name) or () for name in READ_LABELS}
        row["reading"] = reading_of(row["content"], **labels)
    for name in (*LIST_FIELDS, "history"):
        row[name] = json.dumps(row.get(name) or [], ensure_ascii=False)
    row.setdefault("content_hash", text.content_hash(row["content"]))
    row["has_next"] = int(bool(row.get("has_next")))
    return row


def vector_metadata(row: Any) -> dict[str, Any]:
    """A record's metadata in Chroma (what a vector search filters on)."""
    return {"kind": row["kind"], "category": row["category"], "date_ts": float(row["date_ts"])}


def history_entry(old: Any, moment: datetime) -> dict[str, Any]:
    """What a record's history keeps of an earlier version `old`, replaced at `moment` (a
    secret an older version kept is not carried on: ikario_rag/secrets.py)."""
    return {
        "id": old["id"],
        "content": secrets.redact(old["content"]).text,
        "date": old["date"],
        "created_at": old["created_at"],
        "replaced_at": text.iso(moment),
    }
