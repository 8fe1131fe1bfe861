"""A user's memory settings as the JSON API (`/api/memory/settings`) and the memory page's
retrieval sliders read and change them: one public name and one rule per field, so both
refuse the same values, naming the field.

The model is MemorySettings (memory/models.py); "search and reference past chats" is chat's
own preference (memory/client/controls.py), shown and changed here too.
"""

from __future__ import annotations

from django.db import transaction

from chat.edge import field_name
from memory.client import controls
from memory.client import validation as check
from memory.client.errors import MemoryInputError
from memory.models import MemorySettings

MOST_RECALLED = 10  # memories auto-recall may inject per message

# Public name -> MemorySettings field.
FIELDS = {
    "enabled": "memory_enabled",
    "paused": "paused",
    "auto_recall": "auto_retrieve",
    "autosave": "autosave",
    "max_results": "max_results",
    "min_score": "min_score",
}
PAST_CHATS = "reference_past_chats"
NAMES = (*FIELDS, PAST_CHATS)


def as_dict(user) -> dict:
    current = MemorySettings.for_user(user)
    found = {name: getattr(current, attr) for name, attr in FIELDS.items()}
    found[PAST_CHATS] = controls.reference_past_chats(user)
    return found


def _clean(name: str, value):
    if name == "max_results":
        return check.integer(name, value, low=1, high=MOST_RECALLED)
    if name == "min_score":
        return check.score(name, value)
    return check.flag(name, value)


def change(user, changes: dict) -> dict:
    """Apply `changes` ({public name: value}); every field is checked before any is saved,
    so a refused one changes nothing. Returns the settings as they now are."""
    for name in changes:
        if name not in NAMES:
            raise MemoryInputError(
                field_name(name), f"is not a setting (one of {', '.join(NAMES)})"
            )
    cleaned = {name: _clean(name, value) for name, value in changes.items()}
    with transaction.atomic():
        if PAST_CHATS in cleaned:
            controls.set_reference_past_chats(user=user, on=cleaned.pop(PAST_CHATS))
        if cleaned:
            current = MemorySettings.for_user(user)
            for name, value in cleaned.items():
                setattr(current, FIELDS[name], value)
            current.save(update_fields=[FIELDS[name] for name in cleaned])
    return as_dict(user)
