"""Where a memory came from, as its owner reads it: "from chat 'Trip to Lisbon'", a link.

A source "conversation:<id>[:<message>]" names a chat. Only the owner's own chats are
named and linked; a chat they no longer have (deleted, or never theirs: an imported file
may name anyone's) reads as gone, so no other user's title ever shows. A chat imported from
another assistant says which, and when it was had ("from ChatGPT, 2 Mar 2025"); a memory
imported as such (source "imported:<assistant>") says where from.
"""

from __future__ import annotations

import re

from django.urls import reverse

from chat.models import Conversation

_CONVERSATION_SOURCE = re.compile(r"^conversation:(\d{1,18})(?::(\d{1,18}))?$")
# Where an imported chat or memory came from, as its owner reads it (not translated: names).
ASSISTANTS = {"chatgpt": "ChatGPT", "claude": "Claude.ai"}
IMPORTED = "imported:"


def chat_of(source) -> tuple[int, str] | None:
    """(conversation id, message id or "") of a source naming a chat, else None."""
    found = _CONVERSATION_SOURCE.match(source if isinstance(source, str) else "")
    if not found:
        return None
    return int(found.group(1)), found.group(2) or ""


def url(conversation_id: int, message_id: str = "") -> str:
    base = reverse("chat:conversation", args=[conversation_id])
    return f"{base}?m={message_id}#message-{message_id}" if message_id else base


def name_chats(items: list[dict], user) -> list[dict]:
    """Sets each item's "source_chat" from its "source" (one query for all of them):
    {"title", "url"} for a chat of `user`'s, {"gone": True} for a chat they do not have,
    None when the source names no chat."""
    named = {id(item): chat_of(item.get("source")) for item in items}
    wanted = {found[0] for found in named.values() if found}
    chats = (
        {
            pk: (title, source, created_at)
            for pk, title, source, created_at in Conversation.objects.filter(
                user=user, pk__in=wanted
            ).values_list("pk", "title", "source", "created_at")
        }
        if wanted and user is not None and user.is_authenticated
        else {}
    )
    for item in items:
        found = named[id(item)]
        item["source_import"] = imported_from(item.get("source"))
        if found is None:
            item["source_chat"] = None
        elif found[0] in chats:
            title, source, created_at = chats[found[0]]
            item["source_chat"] = {"title": title, "url": url(*found)}
            if source:
                item["source_chat"].update(imported_from=ASSISTANTS.get(source), date=created_at)
        else:
            item["source_chat"] = {"gone": True}
    return items


def imported_from(source) -> str | None:
    """ "pasted" or an assistant's name for a memory imported as such, else None."""
    if not isinstance(source, str) or not source.startswith(IMPORTED):
        return None
    where = source.removeprefix(IMPORTED)
    return ASSISTANTS.get(where, "pasted" if where == "pasted" else None)
