"""How one version of a memory became the next, in words a person reads:
"“lawyer” → “nurse”", "added “in Lisbon”" (the templates add "Changed on 26 Nov 2026:").

The words are compared with difflib; a text changed in more places than a sentence can
say is "rewritten" (the template then shows the new text whole).
"""

from __future__ import annotations

import difflib

from django.utils.dateparse import parse_datetime
from django.utils.translation import gettext as _

# More changed passages than this and a list of them reads worse than the text itself.
MAX_CHANGES = 3
# A changed passage longer than this many words is shown cut, with "…".
MAX_WORDS = 8


def _words(text: str) -> list[str]:
    return str(text or "").split()


def _key(word: str) -> str:
    """A word as compared: case and the punctuation around it do not count."""
    return word.strip(".,;:!?…()[]«»“”\"'").casefold()


def _quoted(words: list[str]) -> str:
    shown = " ".join(words[:MAX_WORDS]) + (" …" if len(words) > MAX_WORDS else "")
    return _("“%(words)s”") % {"words": shown.strip(".,;:!?")}


def change(before: str, after: str) -> dict:
    """{"kind": "same" | "changed" | "rewritten", "what": "“lawyer” → “nurse”" or ""}."""
    old, new = _words(before), _words(after)
    matcher = difflib.SequenceMatcher(None, [_key(w) for w in old], [_key(w) for w in new])
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if not edits:
        return {"kind": "same", "what": ""}
    if len(edits) > MAX_CHANGES or matcher.ratio() < 0.5:
        return {"kind": "rewritten", "what": ""}
    parts = []
    for tag, i1, i2, j1, j2 in edits:
        if tag == "replace":
            parts.append(
                _("%(before)s → %(after)s")
                % {"before": _quoted(old[i1:i2]), "after": _quoted(new[j1:j2])}
            )
        elif tag == "insert":
            parts.append(_("added %(words)s") % {"words": _quoted(new[j1:j2])})
        else:
            parts.append(_("removed %(words)s") % {"words": _quoted(old[i1:i2])})
    return {"kind": "changed", "what": ", ".join(parts)}


def when(value):
    """ISO-8601 from the server -> aware datetime (None if unreadable)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_datetime(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def timeline(entries: list[dict], histories: dict[str, list[dict]]) -> list[dict]:
    """A concept's trace as steps a person reads, oldest first: each memory of `entries`
    (the server's timeline) as it first read, at its date, then each later wording at the
    moment it changed (`histories`: a memory's earlier versions, oldest first). A step is
    said against its own memory's previous wording, else against the step before it:
    {"id", "date", "content", "version": change() or None for the first}."""
    steps = []
    for order, entry in enumerate(entries):
        memory_id = entry.get("id", "")
        wordings = [*(histories.get(memory_id) or []), {"content": entry.get("content", "")}]
        # Version n was written when version n-1 was replaced; the first, at the memory's date.
        dated = [entry.get("date")] + [w.get("replaced_at") for w in wordings[:-1]]
        for n, (wording, date) in enumerate(zip(wordings, dated, strict=True)):
            steps.append(
                {
                    "id": memory_id,
                    "date": when(date),
                    "content": wording.get("content", ""),
                    "own_previous": wordings[n - 1].get("content", "") if n else None,
                    "order": (order, n),
                }
            )
    steps.sort(key=lambda s: (s["date"].timestamp() if s["date"] else float("inf"), s["order"]))
    previous = None
    for step in steps:
        before = step.pop("own_previous")
        before = before if before is not None else previous
        step["version"] = None if before is None else change(before, step["content"])
        previous = step["content"]
        del step["order"]
    return steps
