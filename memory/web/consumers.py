"""The memory page's WebSocket: what changed in the user's memory, live.

It is a page socket like chat's (chat/events.py: it forwards the user's UI events, the
indicator's pulse and toasts), and it also reads memory's own events (memory/client/live.py):
new memories are rendered as cards at the top of the list when the page shows the newest
ones and they match its filters (a search, or a later page, gets a "new memories" notice
instead), changed ones are redrawn, removed ones go, and the counts are redrawn. Cards
land in #memory-live; static/memory/memory.js puts each in its place. The filters come
with the socket's URL (the page's own query string).
"""

from __future__ import annotations

import logging

from asgiref.sync import sync_to_async
from django.http import QueryDict
from django.template.loader import render_to_string
from django.utils import translation

from chat import events
from chat.consumers import UserEventsConsumer, socket_language
from ikario_rag import contract
from memory.client import live, services
from memory.client.errors import MemoryNotFound, MemoryServiceError
from memory.display import cards, sources
from memory.display.forms import MemoryFilterForm
from memory.web.page import PAGE

logger = logging.getLogger("memory.web.consumers")


def _fold(text: str) -> str:
    return " ".join(str(text).split()).lower()


def matches(record: dict, filters: dict) -> bool:
    """Would the page's list (its filters, no search) show this memory?"""
    meta = record.get("metadata") or {}
    if filters.get("kind") and meta.get("kind") != filters["kind"]:
        return False
    if filters.get("category") and meta.get("category") != filters["category"]:
        return False
    tag = _fold((filters.get("tag") or "").lstrip("#"))
    if tag and tag not in {_fold(t) for t in meta.get("tags") or []}:
        return False
    if filters.get("source") and not str(meta.get("source") or "").startswith(filters["source"]):
        return False
    day = cards.when(meta.get("date"))
    if filters.get("date_from") and (day is None or day.date() < filters["date_from"]):
        return False
    return not (filters.get("date_to") and (day is None or day.date() > filters["date_to"]))


def on_memory_changed(sender, *, user, added, removed, updated, reset, **kwargs) -> None:
    """memory_changed receiver (memory/client/live.py): the user's open pages hear of it,
    the header's indicator by a pulse, this socket by the ids."""
    events.publish(
        user.pk,
        html=render_to_string("memory/live.html#pulse"),
        topic=live.TOPIC,
        added=added,
        removed=removed,
        updated=updated,
        reset=reset,
    )


class MemoryPageConsumer(UserEventsConsumer):
    async def connect(self):
        # Cards sent later are in the page's language (kept for the socket's life).
        translation.activate(socket_language(self.scope))
        self.user = self.scope.get("user")
        if not self.user or not self.user.is_authenticated:
            await self.close(code=4401)
            return
        query = QueryDict(self.scope.get("query_string", b"").decode("utf-8", "replace"))
        form = MemoryFilterForm(query)
        self.filters = form.cleaned_data if form.is_valid() else None
        await self.accept()
        await self.join_user_events()

    async def ui_event(self, event):
        await super().ui_event(event)
        if event.get("topic") != live.TOPIC:
            return
        try:
            html = await self._changes(event)
        except Exception:  # noqa: BLE001 -- the page must keep its socket
            logger.exception("live update of the memory page failed")
            return
        if html:
            await self.send(text_data=html)

    def _shows_newest(self) -> bool:
        filters = self.filters
        return filters is not None and not filters.get("q") and filters.get("page", 1) == 1

    async def _changes(self, event) -> str:
        added = event.get("added") or []
        updated = event.get("updated") or []
        records = await self._records([*added, *updated][: contract.MAX_IDS])
        context = {"reload": bool(event.get("reset")), "new_elsewhere": False, "live_cards": []}
        for memory_id in added:
            record = records.get(memory_id)
            if record is None:
                continue
            if self._shows_newest() and matches(record, self.filters):
                context["live_cards"].append(("added", cards.card(record)))
            else:
                context["new_elsewhere"] = True
        for memory_id in updated:
            if memory_id in records:
                context["live_cards"].append(("updated", cards.card(records[memory_id])))
        shown = [card for _what, card in context["live_cards"]]
        await sync_to_async(sources.name_chats)(shown, self.user)
        context["removed"] = event.get("removed") or []
        context["stats"] = await sync_to_async(services.memory_stats, thread_sensitive=False)(
            user=self.user
        )
        return render_to_string(f"{PAGE}#live", context).strip()

    async def _records(self, ids: list[str]) -> dict[str, dict]:
        if not ids:
            return {}
        try:
            found = await services.aget_memories(user=self.user, ids=ids, with_history=True)
        except MemoryNotFound:
            return {}  # deleted again already
        except MemoryServiceError:
            logger.warning("memory page: new memories could not be read", exc_info=True)
            return {}
        return {m.get("id"): m for m in found.get("memories") or []}
