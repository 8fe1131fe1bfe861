"""Where a user's notes may be read from: the operator's grant (NOTES_ROOT) and the
confinement of every path inside the user's folder.

A folder on the server is the operator's to give, not the user's to pick: NOTES_ROOT
(settings) is the directory every notes folder must be inside, resolved with its
symlinks; "{user_id}" or "{username}" in it gives each user a directory of their own
(e.g. /srv/vaults/{username}). Empty (the default): nobody may set a folder.

Inside the folder, a note's path is relative, "/"-separated, with no ".." part, and the
file it names, symlinks resolved, is still inside the folder: a symlink pointing out of the
vault is refused when a note is named and skipped when the folder is walked.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from django.conf import settings
from django.utils.translation import gettext as _

NOTE_SUFFIX = ".md"


class PathRefused(ValueError):
    """A path the user may not use; its message is for the user."""


def root_for(user) -> Path | None:
    """The directory this user's notes folder must be inside, resolved; None: no grant."""
    template = str(getattr(settings, "NOTES_ROOT", "") or "").strip()
    if not template:
        return None
    username = str(user.get_username())
    if username in ("", ".", "..") or "/" in username or "\0" in username:
        return None  # a name that cannot be one directory of the root
    named = template.replace("{user_id}", str(user.pk)).replace("{username}", username)
    return Path(os.path.realpath(named))


def _inside(path: Path, parent: Path) -> bool:
    return path == parent or parent in path.parents


def check_folder(user, value: str) -> str:
    """The folder as stored (absolute, resolved), or PathRefused saying why.

    Given absolute or relative to the user's root; it must exist and lie inside the root."""
    root = root_for(user)
    if root is None:
        raise PathRefused(_("Notes folders are not enabled on this server (NOTES_ROOT)."))
    value = (value or "").strip()
    if "\0" in value:
        raise PathRefused(_("This is not a folder name."))
    given = Path(value) if os.path.isabs(value) else root / value
    resolved = Path(os.path.realpath(given))
    if not _inside(resolved, root):
        raise PathRefused(_("The folder must be inside %(root)s.") % {"root": root})
    if not resolved.is_dir():
        raise PathRefused(_("No such folder: %(folder)s.") % {"folder": resolved})
    return str(resolved)


def granted(user, folder: str) -> bool:
    """The stored folder is still inside the user's root (the operator may have changed
    NOTES_ROOT since it was set): checked again before every read."""
    root = root_for(user)
    return bool(folder) and root is not None and _inside(Path(os.path.realpath(folder)), root)


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
