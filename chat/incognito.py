"""Incognito chats: used like any chat while open, then gone.

An incognito conversation is a normal row while its page is open (the turn needs its
messages), flagged `Conversation.incognito`. It is never listed (sidebar, API), never
found by the search box or Claude's past-chat tools, gets no summaries, and extensions
read the flag (memory saves nothing, recalls nothing and gives no profile in it).

It is deleted, with its messages:
- when its page is left: its last WebSocket closes and no page opens it again within
  CHAT_INCOGNITO_GRACE seconds (a reload reconnects well within that);
- when the user leaves it explicitly (its Leave button: a POST);
- when the user starts another chat (incognito or not), from any tab;
- when the user logs out;
- when found abandoned (untouched for CHAT_INCOGNITO_ABANDONED_AFTER seconds, e.g. its
  process died during the grace period), at any user's next new chat.
Never because a page was fetched: a GET changes nothing (an image in an answer makes the
browser GET any same-origin URL).

Which sockets are open is known per process (`_open`); a page reopened in another process
during the grace period is seen through `updated_at`, which every connection refreshes.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timedelta

from asgiref.sync import async_to_sync
from django.conf import settings
from django.utils import timezone

from chat import answers
from chat.models import Conversation
from core.errors import DATABASE_AWAY, database_away

logger = logging.getLogger(__name__)

_open: dict[int, int] = {}  # conversation id -> WebSockets open on it in this process
_pending: set[asyncio.Task] = set()  # deletions waiting out their grace period


def grace() -> float:
    return float(settings.CHAT_INCOGNITO_GRACE)


async def opened(conversation: Conversation) -> None:
    """A page of the incognito chat connected: it lives on."""
    _open[conversation.pk] = _open.get(conversation.pk, 0) + 1
    await Conversation.objects.filter(pk=conversation.pk).aupdate(updated_at=timezone.now())


def closed(conversation: Conversation) -> None:
    """A page of it closed: delete it after the grace period unless one reopens it."""
    left = _open.get(conversation.pk, 1) - 1
    if left > 0:
        _open[conversation.pk] = left
        return
    _open.pop(conversation.pk, None)
    task = asyncio.get_running_loop().create_task(_end_later(conversation.pk, timezone.now()))
    _pending.add(task)
    task.add_done_callback(_pending.discard)


async def _end_later(conversation_id: int, closed_at: datetime) -> None:
    await asyncio.sleep(grace())
    if _open.get(conversation_id):
        return
    try:
        # Its answer, if one is still being written here, ends with it (its text saved
        # first, which touches updated_at: the chat is then over as of now).
        if await answers.end_here(conversation_id):
            closed_at = timezone.now()
        ended, _ = await Conversation.objects.filter(
            pk=conversation_id, incognito=True, updated_at__lte=closed_at
        ).adelete()
    except Exception as exc:
        if not database_away(exc):
            raise
        # Nobody waits on this task: said in one line, not a traceback.
        logger.warning(
            "incognito conversation %s not ended, %s (%s: %s): it ends when its page is "
            "left again, or when found abandoned",
            conversation_id,
            DATABASE_AWAY,
            type(exc).__name__,
            exc,
        )
        return
    if ended:
        logger.info("incognito conversation %s ended: its page was left", conversation_id)


def end_for_user(user, *, keep: int | None = None) -> int:
    """Delete the user's incognito chats (but `keep`): another chat starts, or they log out."""
    chats = Conversation.objects.filter(user=user, incognito=True)
    if keep is not None:
        chats = chats.exclude(pk=keep)
    ids = list(chats.values_list("pk", flat=True))
    for conversation_id in ids:
        async_to_sync(answers.stop)(conversation_id)  # an answer still written ends with it
    if ids:
        Conversation.objects.filter(pk__in=ids).delete()
        logger.info("incognito conversations %s ended", ids)
    return len(ids)


def sweep_abandoned() -> int:
    """Delete every user's incognito chats untouched for CHAT_INCOGNITO_ABANDONED_AFTER s."""
    after = float(settings.CHAT_INCOGNITO_ABANDONED_AFTER)
    stale = timezone.now() - timedelta(seconds=after)
    ids = list(
        Conversation.objects.filter(incognito=True, updated_at__lt=stale).values_list(
            "pk", flat=True
        )
    )
    if ids:
        Conversation.objects.filter(pk__in=ids).delete()
        logger.info("abandoned incognito conversations %s ended", ids)
    return len(ids)


def on_logged_out(sender, *, user=None, **kwargs) -> None:
    """user_logged_out receiver."""
    if user is not None and user.is_authenticated:
        end_for_user(user)
