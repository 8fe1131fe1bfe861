"""What a client sends, checked where it comes in: one JSON parser and one text check for
every edge (the chat API, the memory API, WebSocket frames, form and query parameters).

- `parse_json(raw, field="body")`: a JSON object or a ChatInputError naming `field`. It
  refuses what Python's json module accepts but nothing downstream can hold: NaN and
  Infinity literals (and 1e999, which Python reads as infinity), integers longer than
  MAX_INT_DIGITS, and containers nested deeper than MAX_DEPTH (json.loads recurses: 100k
  opening brackets raise RecursionError, and even a few hundred levels are never a
  legitimate request).
- `clean_text(field, value)`: a string SQLite can store (UTF-8: no lone surrogate, e.g. a
  JSON "\\ud800") and no NUL; refused with "contains characters that cannot be stored"
  rather than silently altered, so what the user sees stored is what they sent.
- `int_param(field, raw, ...)`: a query or form integer as digits only, in range (int()
  accepts 4,300 digits, and SQLite raises OverflowError on a 20-digit OFFSET).

memory imports this for its own edges; chat maps ChatInputError to a 400 naming the field.
"""

from __future__ import annotations

import json
import math
import re

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

# Deeper than any request of ours (3 levels at most) and than ikario_rag's wire (32).
MAX_DEPTH = 32
# A 64-bit integer has at most 19 digits; more is never a count, an id or an offset.
MAX_INT_DIGITS = 19
UNSTORABLE = "contains characters that cannot be stored"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_DIGITS = re.compile(rf"[+-]?[0-9]{{1,{MAX_INT_DIGITS}}}")


class ChatInputError(ValueError):
    """Bad input from a user or client: which field, and why (shown as a 400)."""

    def __init__(self, field: str, reason: str):
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason

    def sentence(self) -> str:
        """The error as a sentence for the page, in the request's language."""
        name = FIELD_NAMES.get(self.field)
        name = str(name) if name else self.field.capitalize()
        return _("%(field)s %(reason)s.") % {"field": name, "reason": self.reason}


# How the pages name the fields a ChatInputError is about.
FIELD_NAMES = {
    "content": gettext_lazy("Content"),
    "title": gettext_lazy("Title"),
    "model": gettext_lazy("Model"),
}


class _Refused(ValueError):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def _constant(name: str):
    raise _Refused(f"must not hold {name} (numbers must be finite)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused("must not hold a number too large to be finite")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"must not hold an integer longer than {MAX_INT_DIGITS} digits")
    return int(text)


def _depth_over(value, limit: int) -> bool:
    """True when containers nest deeper than `limit` (iterative: any depth is safe)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item)
    return False


def parse_json(raw: bytes | str | None, *, field: str = "body", empty: str = "{}") -> dict:
    """A JSON object from a request body or a frame; ChatInputError(field, why) otherwise."""
    if raw is None or raw in (b"", ""):
        raw = empty
    if isinstance(raw, bytes | bytearray):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ChatInputError(field, "is not valid UTF-8") from None
    try:
        data = json.loads(raw, parse_constant=_constant, parse_float=_float, parse_int=_int)
    except _Refused as exc:
        raise ChatInputError(field, exc.reason) from None
    except RecursionError:
        raise ChatInputError(field, f"is nested deeper than {MAX_DEPTH} levels") from None
    except ValueError:
        raise ChatInputError(field, "is not valid JSON") from None
    if not isinstance(data, dict):
        raise ChatInputError(field, "must be a JSON object")
    if _depth_over(data, MAX_DEPTH):
        raise ChatInputError(field, f"is nested deeper than {MAX_DEPTH} levels")
    return data


def storable(value: str) -> bool:
    return _UNSTORABLE.search(value) is None


def clean_text(field: str, value: str) -> str:
    """`value` unchanged when it can be stored; ChatInputError naming `field` otherwise."""
    if not storable(value):
        raise ChatInputError(field, UNSTORABLE)
    return value


def int_param(field: str, raw, *, default: int, low: int, high: int) -> int:
    """An integer sent as text (query string, form field); `default` when absent or empty."""
    if raw is None or raw == "":
        return default
    if not isinstance(raw, str) or not _DIGITS.fullmatch(raw.strip()):
        raise ChatInputError(field, f"must be an integer between {low} and {high}")
    value = int(raw)
    if not low <= value <= high:
        raise ChatInputError(field, f"must be an integer between {low} and {high}")
    return value


def identifier(field: str, value) -> int:
    """A row id sent in JSON: a positive integer, or its digits as a string."""
    if isinstance(value, str) and _DIGITS.fullmatch(value.strip()):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**63:
        raise ChatInputError(field, "must be a positive integer id")
    return value


def field_name(name) -> str:
    """A client's field name as we may quote it back: short, printable, storable."""
    text = name if isinstance(name, str) else repr(name)
    text = _UNSTORABLE.sub("\ufffd", text)
    return text if len(text) <= 40 else text[:39] + "…"
