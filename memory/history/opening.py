"""Which export a file is, found by reading it, and its items as a stream.

A ChatGPT export (the zip, or its conversations.json), a Claude.ai export (the zip, or its
conversations.json; its memories.json where present) or a text of pasted memories. JSON is
read with ijson, one conversation at a time, straight from the file or from the zip's member
(never unpacked to disk): a 1 GB export takes the memory of its largest conversation.

Refused, with what is wrong: a zip whose names hold a path (absolute, or "..") or whose
members would unpack to far more than they weigh (a zip bomb), a zip without
conversations.json, a file that is neither JSON nor UTF-8 text, JSON of another shape,
text that cannot be stored (NUL, lone surrogates; checks.py).
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import ijson
from django.conf import settings
from django.utils.translation import gettext as _

from memory.history import chatgpt, claude, pasted
from memory.history.checks import Damaged
from memory.history.past import CHATGPT, CLAUDE, PASTED, PastChat, PastMemory

CONVERSATIONS = "conversations.json"
MEMORIES = "memories.json"
# A member may unpack to this many times its packed size: JSON packs ~10x, a bomb ~1000x.
MOST_RATIO = 100
SNIFF_BYTES = 64 * 1024
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
_READ_ERRORS = (ijson.JSONError, ValueError, zipfile.BadZipFile, zlib.error, EOFError)


@dataclass(frozen=True)
class Export:
    path: Path
    kind: str  # CHATGPT, CLAUDE or PASTED
    member: str = ""  # the zip's conversations.json ("" for a bare file)
    memories_member: str = ""  # the zip's memories.json (Claude.ai), if any
    memories_only: bool = False  # a Claude.ai memories.json on its own

    @property
    def zipped(self) -> bool:
        return bool(self.member or self.memories_member)


def most_bytes() -> int:
    return int(settings.MEMORY_HISTORY_MAX_BYTES)


def open_export(path: Path | str) -> Export:
    """The export the file is; Damaged says what is wrong with it."""
    path = Path(path)
    if path.stat().st_size > most_bytes():
        raise Damaged(_("is larger than %(mb)d MB") % {"mb": most_bytes() // (1024 * 1024)})
    if zipfile.is_zipfile(path):
        return _zipped(path)
    with path.open("rb") as raw:
        head = raw.read(SNIFF_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"PK\x03\x04"):
        raise Damaged(_("is a damaged zip"))
    if head[:1] == b"{":
        raise Damaged(_("is a JSON object, where a list of conversations was expected"))
    if head[:1] == b"[" and head[1:].lstrip()[:1] in (b"{", b"]", b""):
        # A list of objects; "[2025-03-02] - ..." is a pasted memory's date.
        with path.open("rb") as raw:
            return _json_kind(path, raw, "")
    _utf8_text(head)
    return Export(path, PASTED)


def _utf8_text(head: bytes) -> None:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if len(head) - exc.start > 4:  # not a character cut at the sniff's end
            raise Damaged(_("is neither an export nor UTF-8 text")) from None
    if _CONTROL.search(head):  # binary, whatever its first bytes decode as
        raise Damaged(_("is neither an export nor UTF-8 text"))


def _zipped(path: Path) -> Export:
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise Damaged(_("is a damaged zip")) from None
    unpacked = 0
    for info in infos:
        name = PurePosixPath(info.filename.replace("\\", "/"))
        if name.is_absolute() or ".." in name.parts or ":" in info.filename:
            raise Damaged(_("holds a path in the zip (%(name)s)") % {"name": info.filename[:80]})
        unpacked += info.file_size
        if info.file_size > 1024 * 1024 and info.file_size > MOST_RATIO * max(
            info.compress_size, 1
        ):
            raise Damaged(_("looks like a zip bomb (%(name)s)") % {"name": info.filename[:80]})
    if unpacked > most_bytes():
        raise Damaged(_("would unpack to more than %(mb)d MB") % {"mb": most_bytes() // 2**20})
    member = _member(infos, CONVERSATIONS)
    if not member:
        raise Damaged(_("is a zip without conversations.json"))
    memories = _member(infos, MEMORIES)
    with _open(path, member) as raw:
        found = _json_kind(path, raw, member)
    if found.kind != CLAUDE:
        memories = ""
    return Export(path, found.kind, member, memories)


def _member(infos, name: str) -> str:
    """The member called `name` at the top of the zip, or in its one folder."""
    found = [i.filename for i in infos if PurePosixPath(i.filename).name == name]
    found = [f for f in found if len(PurePosixPath(f).parts) <= 2]
    return min(found, key=len) if found else ""


def _json_kind(path: Path, raw, member: str) -> Export:
    try:
        first = next(ijson.items(raw, "item", use_float=True), None)
    except _READ_ERRORS as exc:
        raise Damaged(_("is not JSON we can read (%(what)s)") % {"what": _said(exc)}) from None
    if first is None:
        raise Damaged(_("holds no conversations (an empty list, or not a list)"))
    if chatgpt.looks_like(first):
        return Export(path, CHATGPT, member)
    if claude.looks_like(first):
        return Export(path, CLAUDE, member)
    if claude.holds_memories(first):
        return Export(path, CLAUDE, memories_member=member, memories_only=True)
    raise Damaged(_("is a list of something else than ChatGPT or Claude.ai conversations"))


def _said(exc: Exception) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return _("not UTF-8")
    return " ".join(str(exc).split())[:120] or type(exc).__name__


@contextmanager
def _open(path: Path, member: str):
    if not member:
        with path.open("rb") as raw:
            yield raw
        return
    with zipfile.ZipFile(path) as archive, archive.open(member) as raw:
        yield raw


def chats(export: Export) -> Iterator[PastChat]:
    """The export's conversations, in the file's order, one at a time."""
    if export.kind == PASTED or export.memories_only:
        return
    read = chatgpt.chat if export.kind == CHATGPT else claude.chat
    try:
        with _open(export.path, export.member) as raw:
            for n, item in enumerate(ijson.items(raw, "item", use_float=True), 1):
                yield read(item, n)
    except _READ_ERRORS as exc:
        raise Damaged(_("is not JSON we can read (%(what)s)") % {"what": _said(exc)}) from None


def memories(export: Export) -> Iterator[PastMemory]:
    """The memories the export holds: a pasted list's lines, Claude.ai's memories.json."""
    if export.kind == PASTED:
        try:
            with export.path.open("r", encoding="utf-8-sig", newline=None) as lines:
                yield from pasted.memories(lines, source=PASTED)
        except UnicodeDecodeError:
            raise Damaged(_("is not UTF-8 text")) from None
        return
    if not (export.memories_member or export.memories_only):
        return
    try:
        with _open(export.path, export.memories_member) as raw:
            for n, item in enumerate(ijson.items(raw, "item", use_float=True), 1):
                text = claude.memories_text(item, n)
                yield from pasted.memories(io.StringIO(text), source=CLAUDE)
    except _READ_ERRORS as exc:
        raise Damaged(_("is not JSON we can read (%(what)s)") % {"what": _said(exc)}) from None
