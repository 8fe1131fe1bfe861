"""Export all of one's memories as JSON, and import such a file (idempotently).

The file is the records as ikario_rag's list_memories returns them (content, metadata,
history), wrapped in {"format": "ikario-memories", "version": 1, ...}. Importing (a
background job, memory/client/jobs.py, BATCH records per call) puts them back with
restore_memories: dates, sources, labels and history kept; a memory whose text is already
there is skipped, so importing the same file twice adds nothing. A bad file is refused
whole, before anything is stored, with what is wrong and where.
"""

from __future__ import annotations

import json

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _

from ikario_rag import contract
from ikario_rag import text as stored_text
from memory.client import services
from memory.client import validation as check
from memory.client.errors import MemoryInputError

FORMAT = "ikario-memories"
VERSION = 1
PAGE = contract.MAX_RESULTS  # records per list_memories call while exporting
BATCH = 200  # records per restore_memories call while importing (memory/client/jobs.py)
MAX_MEMORIES = 20_000
MAX_HISTORY = 100
_HISTORY_TEXT = ("id", "content", "date", "created_at", "replaced_at", "category", "change")
_METADATA = (
    "category",
    "kind",
    *contract.CONTEXT_LIST_FIELDS,
    "date",
    "created_at",
    "expires_at",
    "source",
)


def max_bytes() -> int:
    return int(settings.MEMORY_IMPORT_MAX_BYTES)


def export_memories(*, user) -> dict:
    """Every memory of the user's, newest first, with its history."""
    memories: list[dict] = []
    offset = 0
    while True:
        page = services.list_memories(user=user, offset=offset, limit=PAGE)
        found = page.get("memories") or []
        for record in found:
            whole = services.whole_history(user=user, record=record)
            memories.append({k: v for k, v in whole.items() if k != "namespace"})
        offset += PAGE
        if not found or offset >= page.get("total", 0):
            break
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": timezone.now().isoformat(),
        "count": len(memories),
        "memories": memories,
    }


def read_export(data: bytes) -> list[dict]:
    """The file's records, checked; MemoryInputError names what is wrong and where."""
    if len(data) > max_bytes():
        limit = max_bytes() / (1024 * 1024)
        raise MemoryInputError("file", _("is larger than %(mb)g MB") % {"mb": limit})
    try:
        parsed = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise MemoryInputError("file", _("is not UTF-8 text")) from None
    except json.JSONDecodeError as exc:
        where = _("line %(line)d, column %(col)d") % {"line": exc.lineno, "col": exc.colno}
        raise MemoryInputError("file", _("is not JSON (%(where)s)") % {"where": where}) from None
    except (ValueError, RecursionError):
        raise MemoryInputError("file", _("is not JSON we can read")) from None
    if not isinstance(parsed, dict) or parsed.get("format") != FORMAT:
        raise MemoryInputError(
            "file", _('is not an Ikario memory export (no "format": "%(f)s")') % {"f": FORMAT}
        )
    if parsed.get("version") != VERSION:
        raise MemoryInputError("version", _("must be %(v)d") % {"v": VERSION})
    memories = parsed.get("memories")
    if not isinstance(memories, list):
        raise MemoryInputError("memories", _("must be a list"))
    if len(memories) > MAX_MEMORIES:
        raise MemoryInputError("memories", _("must hold at most %(n)d") % {"n": MAX_MEMORIES})
    return [_record(raw, f"memories[{pos}]") for pos, raw in enumerate(memories)]


def private_only(record: dict) -> bool:
    """Nothing of the memory's text would be stored: the server would refuse it (and with it
    its whole batch), by its own rule of what it keeps (ikario_rag.text.clean)."""
    return not stored_text.clean(record["content"])


def _storable(field: str, value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise MemoryInputError(field, _("contains characters that cannot be stored")) from None
    if "\x00" in value:
        raise MemoryInputError(field, _("contains characters that cannot be stored"))
    return value


def _record(raw, where: str) -> dict:
    if not isinstance(raw, dict):
        raise MemoryInputError(where, _("must be an object"))
    content = check.text(f"{where}.content", raw.get("content"), max_length=contract.MAX_CONTENT)
    record: dict = {"content": _storable(f"{where}.content", content)}
    if raw.get("id") is not None:
        record["id"] = check.memory_id(raw["id"], f"{where}.id")
    metadata = raw.get("metadata")
    if metadata is not None:
        record["metadata"] = _metadata(metadata, f"{where}.metadata")
    history = raw.get("history")
    if history is not None:
        if not isinstance(history, list) or len(history) > MAX_HISTORY:
            raise MemoryInputError(
                f"{where}.history", _("must be a list of at most %(n)d") % {"n": MAX_HISTORY}
            )
        record["history"] = [_history(e, f"{where}.history[{n}]") for n, e in enumerate(history)]
    return record


def _metadata(raw, where: str) -> dict:
    if not isinstance(raw, dict):
        raise MemoryInputError(where, _("must be an object"))
    unknown = sorted(str(k) for k in raw if k not in _METADATA)
    if unknown:
        raise MemoryInputError(f"{where}.{unknown[0][:40]}", _("is not a known field"))
    meta: dict = {}
    if raw.get("category") is not None:
        meta["category"] = check.choice(f"{where}.category", raw["category"], contract.CATEGORIES)
    if raw.get("kind") is not None:
        meta["kind"] = check.choice(f"{where}.kind", raw["kind"], contract.KINDS)
    for name in contract.CONTEXT_LIST_FIELDS:
        labels = check.labels(f"{where}.{name}", raw.get(name))
        if labels is not None:
            meta[name] = [_storable(f"{where}.{name}", label) for label in labels]
    for name in ("date", "created_at", "expires_at"):
        if raw.get(name) is not None:
            meta[name] = check.iso_date(f"{where}.{name}", raw[name])
    if raw.get("source") is not None:
        source = check.text(f"{where}.source", raw["source"], max_length=contract.MAX_SOURCE)
        meta["source"] = _storable(f"{where}.source", source)
    return meta


def _history(entry, where: str) -> dict:
    if not isinstance(entry, dict):
        raise MemoryInputError(where, _("must be an object"))
    kept: dict = {}
    for name in _HISTORY_TEXT:
        value = entry.get(name)
        if isinstance(value, str):
            kept[name] = _storable(f"{where}.{name}", value[: contract.MAX_CONTENT])
    tags = entry.get("tags")
    if isinstance(tags, list):
        kept["tags"] = [
            _storable(f"{where}.tags", t[: contract.MAX_LABEL]) for t in tags if isinstance(t, str)
        ][: contract.MAX_LIST]
    return kept
