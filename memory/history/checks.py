"""What makes an export damaged, said once: each reader raises `Damaged` naming where."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from django.utils.translation import gettext as _

from memory.client.errors import MemoryInputError

# NUL and lone surrogates (a "\ud800" escape in JSON): no database stores them.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
MAX_TITLE = 200
MAX_ID = 200
MAX_MESSAGES = 20_000  # in one chat: past it, the file is not a real export
MAX_MESSAGE_CHARS = 1_000_000


class Damaged(MemoryInputError):
    """The export cannot be imported: `reason` says what is wrong, and where."""

    def __init__(self, reason: str):
        super().__init__("file", reason)


def text(value, where: str, *, most: int = MAX_MESSAGE_CHARS) -> str:
    """A string of the export, checked: storable, not absurdly long."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Damaged(_("%(where)s: text expected") % {"where": where})
    if _UNSTORABLE.search(value):
        raise Damaged(
            _("%(where)s: holds characters that cannot be stored (NUL or a lone surrogate)")
            % {"where": where}
        )
    if len(value) > most:
        raise Damaged(_("%(where)s: longer than %(n)d characters") % {"where": where, "n": most})
    return value


def identifier(value, where: str) -> str:
    found = text(value if isinstance(value, str) else None, where, most=MAX_ID).strip()
    if not found:
        raise Damaged(_("%(where)s: no id") % {"where": where})
    return found


def epoch(value, default: datetime | None) -> datetime | None:
    """A ChatGPT time (seconds since 1970, a float) as an aware datetime."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 4e9:
        return datetime.fromtimestamp(float(value), tz=UTC)
    return default


def iso(value, default: datetime | None) -> datetime | None:
    """A Claude.ai time ("2025-03-02T10:00:00.000000Z") as an aware datetime."""
    if not isinstance(value, str):
        return default
    try:
        found = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return default
    return found if found.tzinfo else found.replace(tzinfo=UTC)
