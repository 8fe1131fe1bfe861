"""A pasted list of memories: "[2025-03-02] - memory content" lines (what Claude's import
prompt gives), or plain lines, bullets and headings allowed."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from datetime import date, datetime

from django.utils.translation import gettext as _

from ikario_rag import contract
from memory.history import checks
from memory.history.checks import Damaged
from memory.history.past import PastMemory

MAX_MEMORIES = 20_000
_DATED = re.compile(r"^\[(?P<date>[^\]]{1,40})\]\s*(?:[-–—:]\s*)?(?P<text>.*)$")
_BULLET = re.compile(r"^(?:[-*•]|\d{1,3}[.)])\s+")
_HEADING = re.compile(r"^\*\*[^*]{1,80}\*\*:?$")  # "**Work**": a heading, not a memory
_FORMATS = ("%Y-%m-%d", "%Y/%m/%d", "%d %b %Y", "%d %B %Y", "%b %d, %Y", "%B %d, %Y", "%d/%m/%Y")


def saved_on(value: str) -> date | None:
    value = " ".join(value.split())
    for pattern in _FORMATS:
        try:
            return datetime.strptime(value, pattern).date()
        except ValueError:
            continue
    return None


def memories(lines: Iterable[str], *, source: str) -> Iterator[PastMemory]:
    """Each memory of the lines; a blank line, a heading ("# ...", "**...**") or a lone
    bullet is none."""
    count = 0
    for n, line in enumerate(lines, 1):
        where = _("line %(n)d") % {"n": n}
        line = checks.text(line, where, most=contract.MAX_CONTENT).strip()
        line = _BULLET.sub("", line).strip()
        if not line or line.startswith("#") or _HEADING.match(line):
            continue
        saved = None
        dated = _DATED.match(line)
        if dated:
            saved = saved_on(dated.group("date"))
            if saved is not None:
                line = dated.group("text").strip()
        if not line:
            continue
        count += 1
        if count > MAX_MEMORIES:
            raise Damaged(_("more than %(n)d memories") % {"n": MAX_MEMORIES})
        yield PastMemory(line, saved, source)
