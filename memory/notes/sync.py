"""A user's notes folder (an Obsidian vault) as memory: every note carrying the user's tag
(`#ikario` by default, in its text or its front matter's `tags:`) becomes memories of
kind `note`, one per heading section, kept in step with the folder.

A sync walks the folder (Markdown files, not hidden folders like .obsidian, no symlink)
and compares each note's mtime and size with its row (NoteFile): only a note that is new
or whose mtime or size changed is read, and only a regular file with one link, no larger
than NOTES_MAX_NOTE_BYTES (memory/notes_paths.read_note); anything else is left out with
its reason, shown on /memory. Front matter is read without YAML anchors or aliases.
A note read whose content hash is its row's is left alone; a new path whose hash is that
of a note gone from the listing is a rename (its row moves). A changed note's sections
are written first (an unchanged section comes back from ikario_rag's exact-text dedup
with its id), then the memories it no longer has
are deleted: a sync cut short leaves nothing lost and the next one finishes the work.
One job does a bounded share (Budget: notes, bytes, seconds) and queues the rest as a new
job, behind the other users' jobs: one folder cannot hold the shared worker.
A folder that is missing (unmounted) is said once, in the vault's `error`, and its
memories stay. Notes are only ever read.

Each memory says where it comes from: its text starts with the note's path and heading,
its source is `note:<path>#<heading>`, its date the note's mtime.

Runs as the task `sync_notes` (enqueued when the settings are saved, and by a turn
when the last sync is older than NOTES_SYNC_INTERVAL: memory/recall/notes.py) and as
`manage.py notes_sync`.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import yaml
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from django_tasks import task
from markdown_it import MarkdownIt

from ikario_rag import contract
from ikario_rag.private import strip as strip_private
from memory.client import services
from memory.client.errors import MemoryNotFound, MemoryServiceError
from memory.models import MemorySettings, NoteFile, NotesVault
from memory.notes.paths import NOTE_SUFFIX, NoteSkipped, granted, read_note, refusal

logger = logging.getLogger("memory.notes.sync")

KIND = "note"
SOURCE_PREFIX = "note:"
SYNC_CLAIM_SECONDS = 3600
ROW_FIELDS = ["path", "mtime_ns", "size", "sha256", "tagged", "memory_ids"]
_markdown = MarkdownIt("commonmark")
_FRONT_MATTER_END = re.compile(r"^(---|\.\.\.)[ \t]*$", re.MULTILINE)
MAX_FRONT_MATTER_CHARS = 64 * 1024  # a note's properties; more is not front matter
# Entries walked in one listing at most: a bind mount looping into itself, or millions of
# files, end the walk (and nothing is deleted from an unfinished listing).
MAX_ENTRIES = 50_000
FRONT_MATTER = "front_matter"  # a note whose front matter was left out (still read)
NOT_GRANTED = "notes folder not granted to this account (manage.py notes_grant)"
SKIPPED_SHOWN = 20  # notes left out named in the last sync (the count says the rest)
WRITE_CHUNK = 100  # memories added in one call while a sync reads on


# --- one note ------------------------------------------------------------------------


def tag_name(tag: str) -> str:
    """The tag as compared: "#Ikario" -> "ikario" (Obsidian's tags ignore case)."""
    return (tag or "").strip().lstrip("#").strip().lower()


def _tag_pattern(name: str) -> re.Pattern:
    # "#ikario" and its nested "#ikario/work", not "#ikarios" nor "a#ikario".
    return re.compile(rf"(?<![\w#/&])#{re.escape(name)}(?![\w-])", re.IGNORECASE)


class _FrontMatterLoader(yaml.SafeLoader):
    """safe_load's loader refusing anchors and aliases: a few hundred bytes of nested
    aliases stand for billions of items (each level x9), and front matter never needs them."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.YAMLError("anchors and aliases are not read in front matter")
        return super().compose_node(parent, index)


def split_front_matter(text: str) -> tuple[dict | None, str, int]:
    """(front matter as a dict, the body, the body's first line number); the dict is None
    when the front matter is there but not read (anchors or aliases, too long or too deep)."""
    if not text.startswith("---"):
        return {}, text, 0
    first_break = text.find("\n")
    if first_break < 0 or text[:first_break].strip() != "---":
        return {}, text, 0
    end = _FRONT_MATTER_END.search(text, first_break + 1)
    if end is None:
        return {}, text, 0
    said = text[first_break + 1 : end.start()]
    meta = None
    if len(said) <= MAX_FRONT_MATTER_CHARS:
        try:
            meta = yaml.load(said, Loader=_FrontMatterLoader)  # noqa: S506 (safe, no aliases)
            meta = meta if isinstance(meta, dict) else {}
        except (yaml.YAMLError, RecursionError):  # "[[[[…": too deep for the parser
            meta = None
    body_start = end.end() + 1
    skipped_lines = text.count("\n", 0, min(body_start, len(text)))
    return meta, text[body_start:], skipped_lines


def front_matter_tags(meta: dict) -> set[str]:
    """`tags:` (or `tag:`) as a list or a comma/space separated string."""
    found = set()
    for key in ("tags", "tag"):
        value = meta.get(key)
        items = value if isinstance(value, list) else re.split(r"[,\s]+", str(value or ""))
        found.update(tag_name(str(item)) for item in items if item)
    return found - {""}


@dataclass
class Section:
    heading: str  # "" for the text before the first heading
    text: str


@dataclass
class ParsedNote:
    tagged: bool
    sections: list[Section] = field(default_factory=list)
    front_matter_left_out: bool = False


def parse(text: str, tag: str) -> ParsedNote:
    """Whether the note carries `tag`, and its heading sections (only when it does)."""
    name = tag_name(tag)
    if not name or name not in text.lower():
        return ParsedNote(tagged=False)  # the tag's name is nowhere: no need to parse
    meta, body, _ = split_front_matter(text)
    left_out = meta is None
    tokens = _markdown.parse(body)
    # Tags in prose and headings count; in code blocks they do not (Obsidian's rule).
    prose = "\n".join(t.content for t in tokens if t.type == "inline")
    tagged = bool(name) and (
        name in front_matter_tags(meta or {}) or bool(_tag_pattern(name).search(prose))
    )
    if not tagged:
        return ParsedNote(tagged=False, front_matter_left_out=left_out)
    lines = body.splitlines()
    starts = []  # (first line of the heading, first line after it, heading text)
    for pos, token in enumerate(tokens):
        if token.type == "heading_open" and token.map:
            starts.append((token.map[0], token.map[1], tokens[pos + 1].content.strip()))
    sections = []
    bounds = [(0, 0, "")] + starts
    for n, (_, body_from, heading) in enumerate(bounds):
        until = bounds[n + 1][0] if n + 1 < len(bounds) else len(lines)
        said = "\n".join(lines[body_from:until]).strip()
        if said:
            sections.append(Section(heading=heading, text=said))
    return ParsedNote(tagged=True, sections=sections, front_matter_left_out=left_out)


def memory_items(path: str, parsed: ParsedNote, tag: str, mtime_ns: int) -> list[dict]:
    """The add_thoughts items of a tagged note: one per section with something to say."""
    date = datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC).isoformat()
    items = []
    for section in parsed.sections:
        text = strip_private(section.text).strip()
        if not text:
            continue  # only a <private> span: nothing to remember
        where = f"{path} › {section.heading}" if section.heading else path
        source = SOURCE_PREFIX + (f"{path}#{section.heading}" if section.heading else path)
        items.append(
            {
                "content": f"{where}: {text}"[: contract.MAX_CONTENT],
                "context": {
                    "kind": KIND,
                    "source": source[: contract.MAX_SOURCE],
                    "tags": [tag_name(tag)[: contract.MAX_LABEL]],
                    "date": date,
                },
            }
        )
    return items


# --- the folder ----------------------------------------------------------------------


@dataclass
class Listing:
    notes: dict[str, tuple[int, int]]  # {relative path: (mtime_ns, size)}: the notes to follow
    skipped: dict[str, str]  # {relative path: why it is not read} (notes_paths' reasons)
    complete: bool = True  # False: MAX_ENTRIES reached, the rest of the folder unseen


def listing(folder: str) -> Listing:
    """The folder's notes from the directory entries alone (no file is opened): regular
    files with one link and not too large; other .md entries (a pipe, a device, a symlink,
    a hard link) are skipped with their reason. Hidden folders and symlinked folders are
    not walked. Raises OSError when the folder itself cannot be listed."""
    found = Listing(notes={}, skipped={})
    largest = max_note_bytes()
    walked = 0
    pending = [("", folder)]
    while pending:
        prefix, directory = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                walked += 1
                if walked > MAX_ENTRIES:
                    found.complete = False
                    return found
                if entry.name.startswith("."):
                    continue
                relative = f"{prefix}{entry.name}"
                try:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append((relative + "/", entry.path))
                    elif entry.name.lower().endswith(NOTE_SUFFIX):
                        lstat = entry.stat(follow_symlinks=False)
                        why = refusal(lstat.st_mode, lstat.st_nlink, lstat.st_size, largest)
                        if why:
                            found.skipped[relative] = why
                        else:
                            found.notes[relative] = (lstat.st_mtime_ns, lstat.st_size)
                except OSError:
                    continue  # gone meanwhile: the next sync sees it as it is then
    return found


def max_note_bytes() -> int:
    return int(settings.NOTES_MAX_NOTE_BYTES)


# --- a sync ------------------------------------------------------------------------------


@dataclass
class Change:
    row: NoteFile
    items: list[dict]
    old_ids: list[str]


class Budget:
    """The work one sync job may do (notes read or forgotten, bytes read, seconds) before
    it stops and leaves the rest to a later job: the worker is shared, and other users'
    jobs run in between."""

    def __init__(self):
        self.notes = int(settings.NOTES_SYNC_MAX_NOTES)
        self.bytes = int(settings.NOTES_SYNC_MAX_BYTES)
        self.seconds = float(settings.NOTES_SYNC_SECONDS)
        self.deadline = time.monotonic() + self.seconds

        self.used = False

    def spend(self, *, notes: int = 1, size: int = 0) -> None:
        self.notes -= notes
        self.bytes -= size
        self.used = True

    @property
    def spent(self) -> bool:
        # Never before the first note: each job moves on, so the chain of jobs ends.
        over = self.notes <= 0 or self.bytes <= 0 or time.monotonic() > self.deadline
        return self.used and over


@dataclass
class Sync:
    seen: int = 0
    read: int = 0  # notes opened (what an incremental sync keeps small)
    added: int = 0
    changed: int = 0
    renamed: int = 0
    deleted: int = 0
    left: int = 0  # notes still to look at: a later job goes on (the budget was spent)
    skipped: dict[str, str] = field(default_factory=dict)  # {path: why it was left out}
    read_paths: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        said = {k: v for k, v in self.__dict__.items() if k not in ("read_paths", "skipped")}
        said["skipped"] = len(self.skipped)
        # What the user is shown: the first few, by path.
        said["skipped_notes"] = sorted(self.skipped.items())[:SKIPPED_SHOWN]
        return said


def _delete_memories(user, ids) -> None:
    for memory_id in ids:
        # Not found: deleted already (by the user, or by a sync cut short).
        with contextlib.suppress(MemoryNotFound):
            services.delete_memory(user=user, memory_id=memory_id, reason="note changed")


def _forget_notes(vault: NotesVault, budget: Budget) -> bool:
    """The memories of the vault's notes deleted, and their rows (a new folder or tag: the
    notes are looked at again from scratch); False when the budget ran out first."""
    for row in vault.notes.all().iterator():
        if budget.spent:
            return False
        _delete_memories(vault.user, row.memory_ids)
        row.delete()
        budget.spend()
    return True


def _write(user, changes: list[Change]) -> None:
    """Add every change's sections (in batches), then drop the memories they no longer
    have; each note's row is saved once its memories are."""
    timeout = settings.MEMORY_TASK_TIMEOUT
    pending: list[Change] = []
    batch: list[dict] = []

    def flush():
        if batch:
            results = services.add_thoughts(user=user, items=list(batch), timeout=timeout)
            ids = iter(r.get("id") for r in results.get("results") or [])
        else:
            ids = iter(())
        for change in pending:
            change.row.memory_ids = [next(ids) for _ in change.items]
            _delete_memories(user, set(change.old_ids) - set(change.row.memory_ids))
        new = [change.row for change in pending if change.row.pk is None]
        known = [change.row for change in pending if change.row.pk is not None]
        with transaction.atomic():  # one commit for the batch's rows, not one per note
            NoteFile.objects.bulk_create(new)
            NoteFile.objects.bulk_update(known, ROW_FIELDS, batch_size=500)
        pending.clear()
        batch.clear()

    for change in changes:
        if batch and len(batch) + len(change.items) > contract.MAX_BATCH:
            flush()
        pending.append(change)
        batch.extend(change.items[: contract.MAX_BATCH])
        change.items = change.items[: contract.MAX_BATCH]
    flush()


def sync_vault(vault: NotesVault, budget: Budget | None = None) -> Sync:
    """Bring the vault's note memories in step with its folder (see the module's doc), as
    far as `budget` goes: `left` says how many notes a later sync has still to look at."""
    started = time.perf_counter()
    budget = budget or Budget()
    report = Sync()
    user = vault.user
    done = vault.last_sync or {}
    followed = (done.get("folder"), done.get("tag"))
    moved = followed != (vault.folder, tag_name(vault.tag)) and vault.notes.exists()
    if moved and not _forget_notes(vault, budget):
        report.left = vault.notes.count()
        _finish(vault, report, started, error="", followed=followed)
        return report
    if not vault.folder:
        _finish(vault, report, started, error="")
        return report
    if not granted(vault):
        _finish(vault, report, started, error=NOT_GRANTED)
        return report
    try:
        found = listing(vault.folder)
    except OSError as exc:
        _finish(vault, report, started, error=f"notes folder not readable: {exc.strerror}")
        return report
    seen = found.notes
    report.seen = len(seen)
    report.skipped = dict(found.skipped)
    # What each note was at the last sync, without loading its row: a row is loaded only
    # for a note that changed or went.
    last_seen = {
        path: (mtime_ns, size)
        for path, mtime_ns, size in vault.notes.values_list("path", "mtime_ns", "size")
    }
    looked_at = [path for path, stat in last_seen.items() if seen.get(path) != stat]
    known = _rows(vault, looked_at)
    # Gone: neither listed nor skipped (a note left out now keeps its memories, as one in
    # a folder that is unmounted does).
    listed = seen.keys() | found.skipped.keys()
    gone = {path: row for path, row in known.items() if path not in listed}
    gone_by_hash = {row.sha256: row for row in gone.values()}
    to_read = [(path, stat) for path, stat in sorted(seen.items()) if last_seen.get(path) != stat]
    changes = []
    for number, (path, (mtime_ns, size)) in enumerate(to_read):
        if budget.spent:
            report.left = len(to_read) - number
            break
        row = known.get(path)
        try:
            # One note may take as long as a whole job, no longer.
            deadline = time.monotonic() + budget.seconds
            data = read_note(vault.folder, path, max_bytes=max_note_bytes(), deadline=deadline)
        except NoteSkipped as exc:
            report.skipped[path] = exc.reason
            budget.spend()
            continue
        budget.spend(size=len(data))
        report.read += 1
        report.read_paths.append(path)
        digest = hashlib.sha256(data).hexdigest()
        if row is not None and row.sha256 == digest:
            row.mtime_ns, row.size = mtime_ns, size  # touched, not changed
            row.save(update_fields=["mtime_ns", "size"])
            continue
        if row is None and digest in gone_by_hash:
            row = gone_by_hash.pop(digest)  # renamed (or moved): the same note
            gone.pop(row.path, None)
            report.renamed += 1
            row.path = path
            # Its old path is free at once (a new note may take it in this sync); marked
            # unseen, so that a sync cut short reads it again.
            NoteFile.objects.filter(pk=row.pk).update(path=path, mtime_ns=-1)
        elif row is None:
            row = NoteFile(vault=vault, path=path, mtime_ns=mtime_ns, size=size, sha256="")
            report.added += 1
        else:
            report.changed += 1
        old_ids = list(row.memory_ids)
        parsed = parse(data.decode("utf-8", errors="replace"), vault.tag)
        if parsed.front_matter_left_out:
            report.skipped[path] = FRONT_MATTER  # the note is read, its properties are not
        row.mtime_ns, row.size, row.sha256, row.tagged = mtime_ns, size, digest, parsed.tagged
        items = memory_items(path, parsed, vault.tag, mtime_ns) if parsed.tagged else []
        changes.append(Change(row=row, items=items, old_ids=old_ids))
        if sum(len(change.items) for change in changes) >= WRITE_CHUNK:
            _write(user, changes)  # written as it goes: the budget's deadline counts it
            changes = []
    _write(user, changes)
    # Deleted only once every note was looked at: a note gone may be one renamed that a
    # later job reads (its memories move with it), or lie past an unfinished listing.
    if not report.left and found.complete:
        for row in gone.values():
            if budget.spent:
                report.left += 1
                continue
            _delete_memories(user, row.memory_ids)
            row.delete()
            report.deleted += 1
            budget.spend()
    error = "" if found.complete else f"more than {MAX_ENTRIES} files: the rest are not read"
    _finish(vault, report, started, error=error)
    return report


def _rows(vault: NotesVault, paths: list[str]) -> dict[str, NoteFile]:
    rows = {}
    for start in range(0, len(paths), 500):  # within SQLite's limit of query parameters
        for row in vault.notes.filter(path__in=paths[start : start + 500]):
            rows[row.path] = row
    return rows


def _finish(vault: NotesVault, report: Sync, started: float, *, error: str, followed=None) -> None:
    """The vault's last sync saved; `followed`: the (folder, tag) its rows are of, when it
    is not the vault's own yet (the old notes not all forgotten)."""
    folder, tag = followed or (vault.folder, tag_name(vault.tag))
    tagged = list(vault.notes.filter(tagged=True).values_list("memory_ids", flat=True))
    if error and error != vault.error:
        logger.warning("notes of user %s: %s", vault.user_id, error)  # said once
    NotesVault.objects.filter(pk=vault.pk).update(
        last_sync_at=timezone.now(),
        error=error[:500],
        last_sync={
            **report.as_dict(),
            "folder": folder,
            "tag": tag,
            "notes": vault.notes.count(),
            "tagged": len(tagged),
            "memories": sum(len(ids) for ids in tagged),
            "seconds": round(time.perf_counter() - started, 3),
        },
    )


# --- the task ----------------------------------------------------------------------------


def may_sync(user) -> str:
    """Why the user's notes may not be synced now ("" when they may)."""
    if not MemorySettings.is_on_for(user):
        return "memory is off"
    if MemorySettings.objects.filter(user=user, paused=True).exists():
        return "memory is paused: notes are synced once it is back on"
    return ""


def sync_user(user) -> Sync | None:
    """Sync this user's notes folder; None when they have none, memory may not add, or
    another sync of it is under way."""
    vault = NotesVault.objects.select_related("user").filter(user=user).first()
    if vault is None:
        return None
    why_not = may_sync(user)
    if why_not:
        NotesVault.objects.filter(pk=vault.pk).update(error=why_not)
        return None
    # One sync at a time per folder (the worker, the command, a turn's request); a claim
    # older than SYNC_CLAIM_SECONDS is a sync that died.
    now = timezone.now()
    free = Q(sync_started_at__isnull=True) | Q(
        sync_started_at__lt=now - timedelta(seconds=SYNC_CLAIM_SECONDS)
    )
    if not NotesVault.objects.filter(free, pk=vault.pk).update(sync_started_at=now):
        return None
    try:
        return sync_vault(vault)
    except MemoryServiceError as exc:
        NotesVault.objects.filter(pk=vault.pk).update(error=f"memory: {exc.message}"[:500])
        raise
    finally:
        NotesVault.objects.filter(pk=vault.pk).update(sync_started_at=None)


@task()
def sync_notes(user_id: int) -> dict:
    """The background sync of one user's notes folder."""
    user = get_user_model().objects.filter(pk=user_id).first()
    if user is None:
        return {"skipped": "no such user"}
    done = sync_user(user)
    if done and done.left:
        # The rest in a job of its own, queued behind the other users' jobs.
        sync_notes.enqueue(user_id)
    return done.as_dict() if done else {"skipped": "no notes folder, or memory off/paused"}


def request_sync(user_id: int) -> None:
    """Enqueue a sync once the current transaction commits."""
    NotesVault.objects.filter(user_id=user_id).update(sync_requested_at=timezone.now())
    transaction.on_commit(lambda: sync_notes.enqueue(user_id))
