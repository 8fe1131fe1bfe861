"""What a user does to their own memories from the web app's memory page: browse them,
edit one, put deleted or exported ones back, and reset the whole namespace.

Functions over a Memory, as insight.py's are: the records stay the truth (committed
first), a vector that cannot be written leaves the record unindexed for maintenance.
Like every tool, each one works inside the one namespace it is given.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ikario_rag import contract, documents, replies, secrets, text, validate
from ikario_rag.browsing import Browse
from ikario_rag.errors import InputError
from ikario_rag.memory import Memory
from ikario_rag.records import full_record, memory_row, vector_metadata

log = logging.getLogger("ikario_rag.curation")

# Earlier versions a record keeps at most (an edit, a superseding fact): the oldest go.
MAX_HISTORY = 100
_HISTORY_TEXT = ("id", "content", "date", "created_at", "replaced_at", "category", "change")


@dataclass
class Restored:
    """A record to put back (validated): an export's, or one just deleted."""

    content: str
    id: str | None = None
    category: str = contract.DEFAULT_CATEGORY
    kind: str = contract.DEFAULT_KIND
    tags: list[str] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    emotions: list[str] = field(default_factory=list)
    subjects: list[str] = field(default_factory=list)
    date: datetime | None = None
    created_at: datetime | None = None
    expires_at: datetime | None = None
    source: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)
    kept_out: list[str] = field(default_factory=list)  # secrets replaced by a placeholder


def browse(memory: Memory, namespace: str, filters: Browse, offset: int, limit: int) -> dict:
    """A page: at most `limit` records and what one reply holds (ikario_rag/replies.py)."""
    rows, total = memory.store.browse(namespace, filters, offset, limit, text.now().timestamp())
    page = replies.fitting([replies.history_part(full_record(r)) for r in rows])
    after = offset + len(page)
    return {"memories": page, "total": total, "next_offset": after if after < total else None}


def get_with_history(memory: Memory, namespace: str, ids: Sequence[str]) -> list[dict]:
    rows = memory.store.by_ids(namespace, ids, text.now().timestamp())
    return [full_record(rows[i]) for i in dict.fromkeys(ids) if i in rows]


def _search_text(row: Any, content: str, tags: list[str]) -> str:
    """The record's indexed text with the new content and tags; the neighbouring turns a
    conversation turn was indexed with are kept (content and labels hold no newline)."""
    labels = [*json.loads(row["subjects"]), *json.loads(row["concepts"]), *json.loads(row["tags"])]
    parts = row["search_text"].split("\n")
    context = parts[2:] if labels else parts[1:]
    subjects, concepts = json.loads(row["subjects"]), json.loads(row["concepts"])
    rebuilt = documents.index_text(content, subjects=subjects, concepts=concepts, tags=tags)
    return "\n".join([rebuilt, *context])


def update(
    memory: Memory,
    namespace: str,
    memory_id: str,
    *,
    content: str | None,
    category: str | None,
    tags: list[str] | None,
) -> dict:
    """Edit content, category and/or tags in place: same id, re-indexed (full text and
    vector), the previous version appended to the record's history."""
    memory.check_writable()
    memory.wait_ready()
    with memory.write_lock:
        moment = text.now()
        row = memory.store.by_ids(namespace, [memory_id], moment.timestamp()).get(memory_id)
        if row is None:
            raise InputError(f"unknown memory id(s): {memory_id[:40]}")
        new_content = content if content is not None else row["content"]
        new_tags = tags if tags is not None else json.loads(row["tags"])
        new_category = category or row["category"]
        if (new_content, new_tags, new_category) == (
            row["content"],
            json.loads(row["tags"]),
            row["category"],
        ):
            return {"id": memory_id, "status": "unchanged"}
        previous = {
            "id": memory_id,
            # A secret an older version kept is not carried on into the history.
            "content": secrets.redact(row["content"]).text,
            "category": row["category"],
            "tags": json.loads(row["tags"]),
            "date": row["date"],
            "created_at": row["created_at"],
            "replaced_at": text.iso(moment),
            "change": "edited",
        }
        history = [*json.loads(row["history"]), previous][-MAX_HISTORY:]
        search_text = _search_text(row, new_content, new_tags)
        memory.store.update_record(
            namespace,
            memory_id,
            {
                "content": new_content,
                "search_text": search_text,
                "category": new_category,
                "tags": new_tags,
                "content_hash": text.content_hash(new_content),
                "history": history,
            },
        )
        indexed = _index(memory, namespace, [memory_id])
    log.info("edited %s (%d earlier versions)", memory_id, len(history))
    return {"id": memory_id, "status": "updated", "indexed": indexed}


def _index(memory: Memory, namespace: str, ids: Sequence[str]) -> bool:
    """Write the vectors of records just written; False leaves them to maintenance."""
    rows = memory.store.by_ids(namespace, ids, text.now().timestamp())
    found = [rows[i] for i in ids if i in rows]
    if not found:
        return True
    try:
        vectors = memory.embedder.encode(
            [r["search_text"] for r in found], quantised=memory.quantised
        )
        memory.vectors.upsert(
            namespace,
            [r["id"] for r in found],
            vectors,
            [vector_metadata(r) for r in found],
        )
        memory.store.mark_indexed([r["id"] for r in found])
    except Exception:
        memory.vectors.suspect = True
        log.exception("%d memories written without vectors (indexed later)", len(found))
        return False
    return True


def restore(memory: Memory, namespace: str, items: Sequence[Restored]) -> list[dict]:
    """Put records back in order: each keeps its id when no record has it (else gets a new
    one), its dates, labels, source and history. One whose text the namespace already
    holds is a `duplicate` (so restoring twice adds nothing); one already expired is
    `expired`. Returns one {id, status, previous_id?} per item."""
    memory.check_writable()
    memory.wait_ready()
    results: list[dict] = []
    with memory.write_lock:
        moment = text.now()
        now_ts = moment.timestamp()
        taken = memory.store.taken_ids([i.id for i in items if i.id])
        rows: list[dict[str, Any]] = []
        seen: dict[str, str] = {}
        for pos, item in enumerate(items):
            if item.expires_at is not None and item.expires_at.timestamp() <= now_ts:
                results.append({"id": item.id, "status": "expired"})
                continue
            digest = text.content_hash(item.content)
            existing = seen.get(digest) or _stored(memory, namespace, digest, now_ts)
            if existing:
                results.append({"id": existing, "status": "duplicate"})
                continue
            memory_id = item.id if item.id and item.id not in taken else uuid.uuid4().hex
            taken.add(memory_id)
            date = item.date or moment
            created = item.created_at or moment
            rows.append(
                memory_row(
                    item,
                    id=memory_id,
                    namespace=namespace,
                    search_text=documents.index_text(
                        item.content, subjects=item.subjects, concepts=item.concepts, tags=item.tags
                    ),
                    date=date,
                    created=created,
                    # Dates are kept to the second: an export (newest first) keeps its order
                    # among records stored within one second.
                    created_ts=created.timestamp() - pos * 1e-6,
                    expires=item.expires_at,
                    content_hash=digest,
                    history=item.history[-MAX_HISTORY:],
                    has_next=False,
                )
            )
            seen[digest] = memory_id
            result = {"id": memory_id, "status": "restored"}
            if item.id and item.id != memory_id:
                result["previous_id"] = item.id
            if item.kept_out:
                result["kept_out"] = list(item.kept_out)
            results.append(result)
        if rows:
            memory.store.insert(rows)
            indexed = _index(memory, namespace, [r["id"] for r in rows])
            for result in results:
                if result["status"] == "restored":
                    result["indexed"] = indexed
    return results


def _stored(memory: Memory, namespace: str, digest: str, now_ts: float) -> str | None:
    row = memory.store.find_hash(namespace, digest, now_ts)
    return row["id"] if row is not None else None


def forget_all(memory: Memory, namespace: str) -> int:
    """Delete every record of the namespace (and its vectors); returns how many went."""
    ids = sorted(memory.store.record_ids(namespace))
    gone = 0
    for start in range(0, len(ids), 500):
        gone += len(memory.delete(namespace, ids[start : start + 500]))
    log.info("namespace reset: %d memories deleted", gone)
    return gone


# -- argument checks past the types (tools.py) ---------------------------------------------


def source_prefix(value: Any) -> str | None:
    """A list_memories source prefix as sources are stored (private spans removed, ends
    trimmed, inner white space kept)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InputError("source_prefix must be a string")
    return text.clean(value, fold=False) or None


def restored_item(raw: dict, where: str) -> Restored:
    """One restore_memories item -> Restored, by the rules add_thought's context follows."""
    content = raw.get("content")
    if not isinstance(content, str):
        raise InputError(f"{where}content must be a string")
    cleaned, kept, values = validate.kept_out_of(text.clean(content))
    if not cleaned:
        raise InputError(f"{where}content is empty once <private> spans are removed")
    if len(cleaned) > contract.MAX_CONTENT:
        raise InputError(f"{where}content is longer than {contract.MAX_CONTENT} characters")
    item = Restored(content=cleaned, kept_out=kept)
    if raw.get("id") is not None:
        item.id = validate.memory_id(raw["id"], f"{where}id")
    meta = raw.get("metadata") or {}
    if meta.get("category") is not None:
        item.category = validate.choice(
            meta["category"], f"{where}metadata.category", contract.CATEGORIES
        )
    if meta.get("kind") is not None:
        item.kind = validate.choice(meta["kind"], f"{where}metadata.kind", contract.KINDS)
    for name in contract.CONTEXT_LIST_FIELDS:
        labels = validate.string_list(meta.get(name), f"{where}metadata.{name}")
        setattr(item, name, validate.stored_labels(labels, values, item.kept_out))
    item.date = validate.optional_date(meta.get("date"), f"{where}metadata.date")
    item.created_at = validate.optional_date(meta.get("created_at"), f"{where}metadata.created_at")
    item.expires_at = validate.optional_date(meta.get("expires_at"), f"{where}metadata.expires_at")
    source = meta.get("source")
    if source is not None:
        if not isinstance(source, str) or len(source) > contract.MAX_SOURCE:
            raise InputError(
                f"{where}metadata.source must be a string of at most {contract.MAX_SOURCE}"
                " characters"
            )
        item.source = validate.kept_out_of(text.clean(source, fold=False))[0] or None
    item.history = [
        _history_entry(e, f"{where}history[{n}]", item.kept_out)
        for n, e in enumerate(raw.get("history") or [])
    ]
    return item


def _history_entry(entry: Any, where: str, kept_out: list[str]) -> dict[str, Any]:
    """An earlier version as stored: its known text fields (private spans and secrets
    removed, each cut to the content limit) and tags; anything else is dropped."""
    if not isinstance(entry, dict):
        raise InputError(f"{where} must be an object")
    kept: dict[str, Any] = {}
    values: tuple[str, ...] = ()
    for name in _HISTORY_TEXT:
        value = entry.get(name)
        if isinstance(value, str):
            cleaned, kinds, found = validate.kept_out_of(text.clean(value))
            kept[name] = cleaned[: contract.MAX_CONTENT]
            kept_out.extend(k for k in kinds if k not in kept_out)
            values += found
    tags = entry.get("tags")
    if isinstance(tags, list):
        labels = [text.clean(t)[: contract.MAX_LABEL] for t in tags if isinstance(t, str)]
        kept["tags"] = validate.stored_labels(labels, values, kept_out)[: contract.MAX_LIST]
    return kept
