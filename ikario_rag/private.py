"""`<private>...</private>` spans: what lies between the markers is never stored or searched.

A marker is recognised however it is written: nested spans (depth counted), spaces inside
the brackets (`< private >`, `</ private >`), any casing, attributes (`<private class=x>`),
HTML entities for its characters, once or several times over (`&lt;private&gt;`,
`&#60;private&#x3E;`, `&amp;lt;private&amp;gt;`), compatibility forms (`＜private＞`) and
invisible format characters inside the word (`pri\\u200bvate`). An unclosed span hides the
rest of the text: leaking the tail would be worse than losing it. Stripping repeats until
nothing changes, so removing one span can never assemble another.

The markers are found in a decoded view of the text (entities decoded, NFKC, format
characters dropped) in which every character remembers where it came from; what is cut is
the matching stretch of the original, and what is kept is the original text, entities and
all.
"""

from __future__ import annotations

import html
import re
import unicodedata

# Zero-width and other invisible format characters (Unicode category Cf).
_FORMAT = re.compile(
    "[\u00ad\u0600-\u0605\u061c\u06dd\u070f\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
)
_ENTITY = re.compile(r"&(?:#[0-9]{1,8};?|#[xX][0-9a-fA-F]{1,8};?|[A-Za-z][A-Za-z0-9]{1,31};?)")
# A marker in the decoded view: an opening or a closing tag, unterminated up to the end.
_MARKER = re.compile(r"<\s*(/)?\s*private\b[^>]*(?:>|$)", re.IGNORECASE)
# Entity layers decoded at most (`&amp;amp;lt;` is three); more is not a plausible marker.
_LAYERS = 4


def strip(text: str) -> str:
    """The text with every private span (markers included) replaced by a space."""
    while _may_hold_marker(text):
        stripped = _strip_once(text)
        if stripped == text:
            break
        text = stripped
    return text


def _may_hold_marker(text: str) -> bool:
    """Cheap test first: most texts hold neither an entity nor the word, in any form."""
    if "&" in text:
        return True
    folded = _FORMAT.sub("", unicodedata.normalize("NFKC", text)).casefold()
    return "private" in folded


def _strip_once(text: str) -> str:
    view, origin = _decoded(text)
    cuts: list[tuple[int, int]] = []  # [start, end) in the view
    depth = 0
    span_start = 0
    for marker in _MARKER.finditer(view):
        closing = marker.group(1) is not None
        if not closing:
            if depth == 0:
                span_start = marker.start()
            depth += 1
        elif depth > 0:
            depth -= 1
            if depth == 0:
                cuts.append((span_start, marker.end()))
        else:  # a closing marker with nothing open: drop the marker itself
            cuts.append((marker.start(), marker.end()))
    if depth > 0:
        cuts.append((span_start, len(view)))
    if not cuts:
        return text
    pieces: list[str] = []
    kept_from = 0
    for start, end in cuts:
        cut_from = origin[start]
        cut_to = origin[end] if end < len(view) else len(text)
        pieces.append(text[kept_from:cut_from])
        pieces.append(" ")
        kept_from = cut_to
    pieces.append(text[kept_from:])
    return "".join(pieces)


def _decoded(text: str) -> tuple[str, list[int]]:
    """(the view, for each of its characters the index in `text` where its source starts)."""
    chars: list[str] = []
    origin: list[int] = []
    for index, char in enumerate(text):
        if _FORMAT.match(char):
            continue
        for part in unicodedata.normalize("NFKC", char):
            chars.append(part)
            origin.append(index)
    view = "".join(chars)
    for _ in range(_LAYERS):
        if "&" not in view:
            break
        decoded: list[str] = []
        new_origin: list[int] = []
        last = 0
        for entity in _ENTITY.finditer(view):
            value = _FORMAT.sub("", unicodedata.normalize("NFKC", html.unescape(entity.group())))
            if value == entity.group():
                continue
            decoded.append(view[last : entity.start()])
            new_origin.extend(origin[last : entity.start()])
            decoded.append(value)
            new_origin.extend([origin[entity.start()]] * len(value))
            last = entity.end()
        if not decoded:
            break
        decoded.append(view[last:])
        new_origin.extend(origin[last:])
        view, origin = "".join(decoded), new_origin
    return view, origin
