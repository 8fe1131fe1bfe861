"""A user's UI events: what another part of the app publishes to every page the user has
open, without knowing which pages those are.

Each page's WebSocket consumer joins its user's group (`user_group`) and, for an event,
sends its `html` as it is: a fragment whose top-level elements carry `hx-swap-oob`, so
htmx's ws extension swaps them in place (a toast, a widget refreshing itself). An event is
a dict of JSON-ready values; a consumer that knows more may read more of it (memory's own
page reads which memories changed).

Publishing never fails the caller: a channel layer that is down or missing is logged.
With the in-memory layer (one process, the default) the groups live in the event loop
that serves the WebSockets, and that layer is not thread-safe: code running in another
thread with no loop of its own (the background worker) hands the send to that loop.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

logger = logging.getLogger(__name__)

EVENT_TYPE = "ui.event"  # the consumers' handler: ui_event(self, event)
# The loop the WebSocket consumers of this process run on (set when one connects).
_socket_loop: asyncio.AbstractEventLoop | None = None


def user_group(user_id: int) -> str:
    return f"ui.user.{user_id}"


def socket_loop_is(loop: asyncio.AbstractEventLoop) -> None:
    """Called by every consumer on connect: where this process's groups live."""
    global _socket_loop
    _socket_loop = loop


def _message(html: str, data: dict) -> dict:
    return {**data, "type": EVENT_TYPE, "html": html}


async def apublish(user_id: int, *, html: str = "", **data) -> None:
    """Send an event to every page `user_id` has open (from async code)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(user_group(user_id), _message(html, data))
    except Exception:  # noqa: BLE001 -- a live update must never fail what caused it
        logger.warning("UI event for user %s not sent", user_id, exc_info=True)


def publish(user_id: int, *, html: str = "", **data) -> None:
    """The same from sync code (a view, the background worker, a command)."""
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        running = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is not None:
        # Sync code on an event loop's own thread cannot wait for a send: schedule it.
        running.create_task(apublish(user_id, html=html, **data))
        return
    if isinstance(layer, InMemoryChannelLayer):
        loop = _socket_loop
        if loop is None or loop.is_closed():
            return  # no page ever connected to this process: nobody to tell
        future = asyncio.run_coroutine_threadsafe(apublish(user_id, html=html, **data), loop)
        future.add_done_callback(_log_failure)
        return
    try:
        async_to_sync(apublish)(user_id, html=html, **data)
    except Exception:  # noqa: BLE001
        logger.warning("UI event for user %s not sent", user_id, exc_info=True)


def _log_failure(future) -> None:
    if not future.cancelled() and future.exception() is not None:
        logger.warning("UI event not sent: %r", future.exception())
