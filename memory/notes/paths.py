"""Where a user's notes may be read from: the account's own folder, and the confinement
of every path inside it.

A folder belongs to an account, not to a name: it is the account's when the app made it,
empty, for that account (`make_folder`: NOTES_ROOT/<account id>, refused if anything is
there already), or when the operator granted it to that account (manage.py notes_grant).
A folder that merely bears the account's name or number is never adopted: notes written
before the account existed are not its. The grant is kept in the database
(NotesVault.granted_folder) and checked again before every read.

Inside the folder, a note's path is relative, "/"-separated, with no ".." part, and the
file it names, symlinks resolved, is still inside the folder: a symlink pointing out of the
vault is refused when a note is named and skipped when the folder is walked.

A note is read by `read_note` only: one directory at a time from the folder, never through
a symlink (O_NOFOLLOW), without waiting on a pipe (O_NONBLOCK), checked after it is open
(fstat: a regular file with no other hard link, not too large) and read within a deadline.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.utils.translation import gettext as _

NOTE_SUFFIX = ".md"


class PathRefused(ValueError):
    """A path the user may not use; its message is for the user."""


def notes_root() -> Path | None:
    """The directory the app makes accounts' notes folders in (NOTES_ROOT); None: none."""
    root = settings.NOTES_ROOT.strip()
    return Path(os.path.realpath(root)) if root else None


def make_folder(user) -> str:
    """A new, empty folder made for this account (NOTES_ROOT/<account id>, private), or
    PathRefused: one already there is not adopted, whoever made it."""
    root = notes_root()
    if root is None:
        raise PathRefused(_("Notes folders are not enabled on this server (NOTES_ROOT)."))
    folder = root / str(user.pk)
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder.mkdir(mode=0o700)  # fails if it exists: made now, for this account only
    except FileExistsError:
        raise PathRefused(
            _(
                "%(folder)s already exists on the server and was not made for your account: "
                "only the administrator can grant it to you (manage.py notes_grant)."
            )
            % {"folder": folder}
        ) from None
    except OSError as exc:
        raise PathRefused(
            _("The notes folder could not be made: %(reason)s.") % {"reason": exc.strerror}
        ) from None
    return str(folder)


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def own_folder(vault) -> Path | None:
    """The account's granted folder while it is still the directory granted (not since
    replaced by a symlink to elsewhere); None: the account has none."""
    if not vault.granted_folder:
        return None
    granted_path = Path(vault.granted_folder)
    return granted_path if Path(os.path.realpath(granted_path)) == granted_path else None


def check_folder(vault, value: str) -> str:
    """The folder as stored (absolute, resolved), or PathRefused saying why.

    Given absolute or relative to the account's own folder; it must exist inside it."""
    own = own_folder(vault)
    if own is None:
        raise PathRefused(_("Your account has no notes folder on this server yet."))
    value = (value or "").strip()
    if "\0" in value:
        raise PathRefused(_("This is not a folder name."))
    given = Path(value) if os.path.isabs(value) else own / value
    resolved = Path(os.path.realpath(given))
    if not _inside(resolved, own):
        raise PathRefused(_("The folder must be inside %(root)s.") % {"root": own})
    if not resolved.is_dir():
        raise PathRefused(_("No such folder: %(folder)s.") % {"folder": resolved})
    return str(resolved)


def granted(vault) -> bool:
    """The vault's folder lies in the account's own folder (the operator may have revoked
    or moved the grant since it was chosen): checked again before every read."""
    own = own_folder(vault)
    folder = vault.folder
    return bool(folder) and own is not None and _inside(Path(os.path.realpath(folder)), own)


def check_note_path(value: str) -> str:
    """A note's path relative to the folder, normalised ("a/b.md"), or PathRefused."""
    value = (value or "").strip().replace("\\", "/")
    if not value or "\0" in value:
        raise PathRefused(_("An empty note path."))
    if value.startswith("/") or (len(value) > 1 and value[1] == ":"):
        raise PathRefused(
            _("“%(path)s”: give a path relative to the notes folder.") % {"path": value}
        )
    parts = PurePosixPath(value).parts
    if ".." in parts:
        raise PathRefused(_("“%(path)s”: “..” may not leave the notes folder.") % {"path": value})
    if not value.lower().endswith(NOTE_SUFFIX):
        raise PathRefused(_("“%(path)s”: a note is a .md file.") % {"path": value})
    return str(PurePosixPath(*[p for p in parts if p != "."]))


def resolve_note(folder: str, relative: str) -> Path:
    """The file a relative note path names, symlinks resolved, or PathRefused when it is
    outside the folder (a symlink escaping it) or not a file."""
    base = Path(os.path.realpath(folder))
    target = Path(os.path.realpath(base / check_note_path(relative)))
    if not _inside(target, base) or target == base:
        raise PathRefused(_("“%(path)s” leads out of the notes folder.") % {"path": relative})
    if not target.is_file():
        raise PathRefused(_("“%(path)s”: no such note.") % {"path": relative})
    return target


# --- reading one note ------------------------------------------------------------------

# Why a note was left out (shown to the user: memory/web/notes.py says each in words).
NOT_A_FILE = "not_a_file"  # a pipe, a device, a socket: opening or reading may never end
SYMLINK = "symlink"  # followed, it could lead anywhere on the server
LINKED = "linked"  # another hard link: the same file may be someone else's, elsewhere
TOO_LARGE = "too_large"
SLOW = "slow"  # not read before the sync's deadline
UNREADABLE = "unreadable"

_READ_CHUNK = 64 * 1024
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NOTE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


class NoteSkipped(Exception):
    """A note not read; `reason` is one of the constants above."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def refusal(mode: int, links: int, size: int, max_bytes: int) -> str:
    """Why a file with this stat is not read as a note ("" when it may be)."""
    if stat.S_ISLNK(mode):
        return SYMLINK
    if not stat.S_ISREG(mode):
        return NOT_A_FILE
    if links > 1:
        return LINKED
    if size > max_bytes:
        return TOO_LARGE
    return ""


def _open_folder(name: str, parent: int) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except NotADirectoryError:
        # O_DIRECTORY | O_NOFOLLOW on a symlink says ENOTDIR: say which it was.
        if stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise NoteSkipped(SYMLINK) from None
        raise


def read_note(
    folder: str,
    relative: str,
    *,
    max_bytes: int,
    deadline: float | None = None,
    cut: bool = False,
) -> bytes:
    """The bytes of the note at `relative` ("/"-separated) in `folder`, or NoteSkipped.

    Each directory is opened from the one before it, without following a symlink, so that
    no path swapped meanwhile leads out of the folder; the file is checked once open
    (fstat), and read in chunks until `deadline` (time.monotonic()). Larger than
    `max_bytes`: refused, or with `cut` its first `max_bytes` bytes."""
    parts = relative.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise NoteSkipped(UNREADABLE)
    opened: list[int] = []
    try:
        try:
            opened.append(os.open(folder, _DIR_FLAGS))
            for part in parts[:-1]:
                opened.append(_open_folder(part, opened[-1]))
            opened.append(os.open(parts[-1], _NOTE_FLAGS, dir_fd=opened[-1]))
        except OSError as exc:
            # ELOOP: a symlink met (O_NOFOLLOW); ENXIO: a socket; the rest: unreadable.
            reasons = {errno.ELOOP: SYMLINK, errno.ENXIO: NOT_A_FILE}
            raise NoteSkipped(reasons.get(exc.errno, UNREADABLE)) from None
        note = opened[-1]
        found = os.fstat(note)
        why = refusal(found.st_mode, found.st_nlink, 0 if cut else found.st_size, max_bytes)
        if why:
            raise NoteSkipped(why)
        chunks, size = [], 0
        while True:
            if deadline is not None and time.monotonic() > deadline:
                raise NoteSkipped(SLOW)
            try:
                chunk = os.read(note, _READ_CHUNK)
            except OSError:
                raise NoteSkipped(UNREADABLE) from None
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > max_bytes:
                if cut:
                    return b"".join(chunks + [chunk])[:max_bytes]
                raise NoteSkipped(TOO_LARGE)  # it grew since it was looked at
            chunks.append(chunk)
    finally:
        for fd in opened:
            os.close(fd)
