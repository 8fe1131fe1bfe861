"""The user's memory controls, as Claude.ai and ChatGPT have them, all switched from the
memory page's Controls (memory/web/controls.py).

- **Memory on** (`MemorySettings.memory_enabled`): off means off everywhere: no tools,
  recall, profile or saving, in every conversation.
- **Pause** (`MemorySettings.paused`): memories are kept and still recalled, but nothing
  new is added: Claude gets no save tool, auto-save and extraction skip the user, and
  the save buttons say "Memory paused". What is said while paused is never saved, even
  after resuming (memory/learning/kept_out.py). What the user adds by hand on the memory page
  (an import, the API) is still added: pausing stops the assistant, not the user.
- **Save conversations to memory** (`MemorySettings.autosave`): auto-save on or off.
- **Search and reference past chats**: chat's own preference
  (`UserPreferences.reference_past_chats`), switched from the memory page too.
- **Reset**: every memory deleted (ikario_rag's forget_all), with the profile, the
  retrieval log and the record of which exchanges were saved; auto-save then never
  brings back what was said before the reset (`reset_at`).
- **Per conversation** (`ConversationSettings.enable_memory`): no memory tools, recall,
  profile or auto-save in that chat.

Whether memory is on for a user's chat, and why not, is `memory_off_for` (it reads the
switches) and `why_memory_off` (the rule, on switches the caller has read already).
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from chat.models import Conversation, ConversationSettings, UserPreferences
from memory.client import services
from memory.models import (
    DeletedMemory,
    MemoryRetrieval,
    MemorySettings,
    SavedExchange,
    UserProfile,
)

logger = logging.getLogger("memory.client.controls")


# Why memory is off for a chat, strongest first ("" when it is on).
DISABLED = "disabled"  # this server runs without memory (MCP_MEMORY_ENABLED)
INCOGNITO = "incognito"  # nothing of an incognito chat reaches memory
OFF = "off"  # the user switched memory off: everywhere
CHAT_OFF = "chat_off"  # the chat's own switch
PAUSED = "paused"  # memories still recalled, nothing new saved
# What keeps a chat from memory altogether (no tools, recall, profile or saving).
SHUT = (DISABLED, INCOGNITO, OFF, CHAT_OFF)


def why_memory_off(
    *, conversation=None, memory_on: bool = True, chat_memory_on: bool = True, paused=False
) -> str:
    """Why memory is off for `conversation` (or everywhere, with none), on the switches the
    caller read (a switch not read is taken as on); "" when it is on."""
    if not settings.MCP_MEMORY_ENABLED:
        return DISABLED
    if conversation is not None and conversation.incognito:
        return INCOGNITO
    if not memory_on:
        return OFF
    if conversation is not None and not chat_memory_on:
        return CHAT_OFF
    return PAUSED if paused else ""


def memory_off_for(*, user=None, conversation=None, memory_settings=None) -> str:
    """Why memory is off for this user's chat (`conversation`, or anywhere with none),
    the switches read here; "" when it is on."""
    early = why_memory_off(conversation=conversation)
    if early:
        return early
    if memory_settings is None:
        user_id = user.pk if user is not None else conversation.user_id
        memory_settings = MemorySettings.objects.filter(user_id=user_id).first()
    return why_memory_off(
        conversation=conversation,
        memory_on=memory_settings is None or memory_settings.memory_enabled,
        chat_memory_on=conversation is None or conversation_memory_on(conversation),
        paused=memory_settings is not None and memory_settings.paused,
    )


def settings_of(user) -> MemorySettings:
    return MemorySettings.for_user(user)


def saving_paused(user_id: int) -> bool:
    return MemorySettings.objects.filter(user_id=user_id, paused=True).exists()


def set_memory_enabled(*, user, on: bool) -> MemorySettings:
    return _set(user, memory_enabled=on)


def set_paused(*, user, paused: bool) -> MemorySettings:
    return _set(user, paused=paused)


def set_autosave(*, user, on: bool) -> MemorySettings:
    return _set(user, autosave=on)


def _set(user, **fields) -> MemorySettings:
    current = MemorySettings.for_user(user)
    for name, value in fields.items():
        setattr(current, name, value)
    current.save(update_fields=list(fields))
    return current


def reference_past_chats(user) -> bool:
    prefs = UserPreferences.objects.filter(user=user).only("reference_past_chats").first()
    return prefs is None or prefs.reference_past_chats


def set_reference_past_chats(*, user, on: bool) -> None:
    UserPreferences.objects.update_or_create(user=user, defaults={"reference_past_chats": on})


def conversation_memory_on(conversation: Conversation) -> bool:
    return not ConversationSettings.objects.filter(
        conversation=conversation, enable_memory=False
    ).exists()


def set_conversation_memory(*, conversation: Conversation, on: bool) -> None:
    ConversationSettings.objects.update_or_create(
        conversation=conversation, defaults={"enable_memory": on}
    )


def reset_memory(*, user, timeout=None) -> int:
    """Delete everything memory holds about the user; returns how many memories went.

    The memories go first: if the memory server cannot do it, nothing else is touched.
    A background job (memory/client/jobs.py) runs it: tens of thousands take longer than a call."""
    deleted = services.forget_all(user=user, timeout=timeout).get("deleted", 0)
    with transaction.atomic():
        UserProfile.objects.filter(user=user).delete()
        DeletedMemory.objects.filter(user=user).delete()  # no Undo brings one back
        MemoryRetrieval.objects.filter(user=user).delete()
        SavedExchange.objects.filter(conversation__user=user).delete()
        # update(): a reset is not activity; the sidebar keeps its order.
        Conversation.objects.filter(user=user).update(has_memory_backup=False)
        _set(user, reset_at=timezone.now())
    logger.info("memory of user %s reset: %d memories deleted", user.pk, deleted)
    return deleted
