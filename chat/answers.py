"""An answer being written: a task of the process, not of the page that asked for it.

As on Claude.ai, an answer runs to its end whoever watches: leaving the page or reloading it
does not stop it; Stop does (`stop()`), from any page of the conversation, and the partial
text is kept as "stopped". The consumer (chat/consumers.py) starts it with `start()`.

Every frame it shows goes to the conversation's group on the channel layer
(`conversation_group`), which every page open on the conversation joins: the tab that sent
the message, another tab, a page that comes back. A page that opens while the answer is being
written asks it for what it has so far (`catch_up`): one frame with the text, tool calls and
notices so far; the page then follows the group's frames. The answer hears Stop and catch-up
on a channel of its own (in `answer_group`), so pages and the answer may be in different
processes (the Redis layer). Frames and catch-ups go out one at a time (`_sending`): a page
receives its catch-up after every frame it contains, and drops the frames before it.

If the process dies, the answer's row stays "streaming" and its heartbeat stops: the next
page to open the conversation settles it as stopped (chat/streaming.py).
"""

from __future__ import annotations

import asyncio
import copy
import logging

from channels.layers import get_channel_layer
from django.utils.translation import gettext as _

from chat import streaming
from chat.frames import aframe, frame, settled_frame
from chat.models import Conversation, Message
from chat.turn import run_turn

logger = logging.getLogger(__name__)

FRAME = "chat.frame"  # the pages' handler: ChatConsumer.chat_frame({"html", "kind"})
# What a frame is, for a page catching up: "message" (a whole message: the user's, or one
# removed), "started" and "piece" (the answer as it grows: the catch-up holds them),
# "settled" (the answer as saved, or its failure), "so_far" (a catch-up).
CAUGHT_UP_BY_SO_FAR = ("started", "piece")

OVER = "answer.over"  # the answer's own order to its listener: the answer is over
LISTENER_DEADLINE = 10.0  # seconds the listener has to read OVER before it is cancelled

# The answers this process writes: conversation id -> Answer.
_writing: dict[int, Answer] = {}


def conversation_group(conversation_id: int) -> str:
    return f"chat.conversation.{conversation_id}"


def answer_group(conversation_id: int) -> str:
    return f"chat.answer.{conversation_id}"


async def tell(conversation_id: int, html: str, kind: str) -> None:
    """Show a frame on every page open on the conversation."""
    message = {"type": FRAME, "html": html, "kind": kind}
    await get_channel_layer().group_send(conversation_group(conversation_id), message)


def start(conversation: Conversation, user_message: Message) -> Answer | None:
    """Start writing the answer to `user_message`, unless this process already writes one
    in the conversation (two pages opened on a message sent from the new-chat page)."""
    if _here(conversation.pk) is not None:
        return None
    answer = _writing[conversation.pk] = Answer(conversation, user_message)
    answer.task = asyncio.create_task(answer.write())

    def over(_task):
        if _writing.get(conversation.pk) is answer:
            del _writing[conversation.pk]

    # Released however the task ends, even cancelled before its first step.
    answer.task.add_done_callback(over)
    return answer


def _here(conversation_id: int) -> Answer | None:
    """The answer this process writes in the conversation now, if any (one whose event loop
    is gone, as a finished test's, is not)."""
    answer = _writing.get(conversation_id)
    if answer is None or answer.task is None or answer.task.done():
        return None
    if answer.task.get_loop() is not asyncio.get_running_loop():
        return None
    return answer


async def being_written(conversation: Conversation) -> bool:
    """Whether an answer is being written in the conversation, by any process."""
    if _here(conversation.pk) is not None:
        return True
    last = (
        await Message.objects.filter(conversation=conversation)
        .order_by("-created_at", "-id")
        .afirst()
    )
    return (
        last is not None
        and last.status == Message.Status.STREAMING
        and not streaming.is_abandoned(last)
    )


async def stop(conversation_id: int) -> None:
    """Stop the answer being written in the conversation, whichever process writes it."""
    await get_channel_layer().group_send(answer_group(conversation_id), {"type": "answer.stop"})


async def catch_up(conversation_id: int, reply_to: str) -> None:
    """Ask the answer being written for what it has so far, sent to channel `reply_to`."""
    order = {"type": "answer.catch_up", "reply_to": reply_to}
    await get_channel_layer().group_send(answer_group(conversation_id), order)


async def end_here(conversation_id: int, *, timeout: float = 10.0) -> bool:
    """Stop this process's answer in the conversation and wait (up to `timeout` s) until its
    partial text is saved: the conversation is about to end (an incognito chat left). True
    if there was one."""
    answer = _here(conversation_id)
    if answer is None:
        return False
    answer.task.cancel()
    await asyncio.wait([answer.task], timeout=timeout)
    return True


class Answer:
    """One answer this process writes, and what it has shown so far (for a catch-up)."""

    def __init__(self, conversation: Conversation, user_message: Message):
        self.conversation = conversation
        self.user_message = user_message
        self.task: asyncio.Task | None = None
        self.message: Message | None = None  # its row, once the turn has made it
        self.text: list[str] = []
        self.calls: dict[str, dict] = {}  # tool calls by id, as shown
        self.notices: list[str] = []
        self._sending = asyncio.Lock()
        self.over = False

    async def write(self) -> None:
        layer = get_channel_layer()
        inbox = await layer.new_channel()
        await layer.group_add(answer_group(self.conversation.pk), inbox)
        listening = asyncio.create_task(self._listen(layer, inbox))
        try:
            await self._run()
        finally:
            await layer.group_discard(answer_group(self.conversation.pk), inbox)
            await self._stop_listening(layer, inbox, listening)

    async def _run(self) -> None:
        pk = self.conversation.pk
        try:
            async for event in run_turn(
                conversation=self.conversation, user_message=self.user_message
            ):
                async with self._sending:
                    html, kind = await self._shown(event)
                    if html:
                        await tell(pk, html, kind)
        except asyncio.CancelledError:
            await self._show_stopped()
            raise
        except Exception:
            logger.exception("the answer in conversation %s failed", pk)
            said = _("The answer could not be streamed. Reload the page.")
            html = frame("turn_state", busy=False) + frame("composer_error", text=said)
            await tell(pk, html, "settled")

    async def _show_stopped(self) -> None:
        """The answer as run_turn saved it once stopped, on every page (nothing when its
        chat is gone: deleted, or an incognito chat that ended)."""
        if self.message is None:
            return
        try:
            await self.message.arefresh_from_db()
        except Message.DoesNotExist:
            return
        html = await settled_frame(self.message, turn_over=True, busy=False)
        await tell(self.conversation.pk, html, "settled")

    async def _shown(self, event) -> tuple[str, str]:
        """The frame for one event of the turn (and what it adds to the answer so far)."""
        kind = event.kind
        if kind == "started":
            self.message = event.message
            return await aframe("answer_started", message=event.message, busy=True), "started"
        if kind == "text":
            self.text.append(event.text)
            return frame("text_delta", message_id=self.message.pk, text=event.text), "piece"
        if kind == "notice":
            self.notices.append(event.text)
            return frame("notice", message_id=self.message.pk, text=event.text), "piece"
        if kind == "tool_started":
            call = self.calls[event.id] = {"id": event.id, "name": event.name, "input": event.input}
            return frame("tool_started", message_id=self.message.pk, call=call), "piece"
        if kind == "tool_finished":
            call = {**self.calls.get(event.id, {}), **event.as_dict(), "done": True}
            self.calls[event.id] = call
            return frame("tool_finished", call=call), "piece"
        if kind in ("done", "error"):
            return await settled_frame(event.message, turn_over=True, busy=False), "settled"
        return "", ""

    async def _stop_listening(self, layer, inbox: str, listening: asyncio.Task) -> None:
        """End the listener with an order on its inbox, never by cancelling its receive: a
        channels-redis receive cancelled mid-read loses the message Redis had popped for
        any channel of this process (a page's last frame, on 2.9 % of socket turns)."""
        self.over = True  # a catch-up asked from now on: the page has the settled frame
        try:
            await layer.send(inbox, {"type": OVER})
            done, _ = await asyncio.wait([listening], timeout=LISTENER_DEADLINE)
        except Exception:
            done = None
        if not done:  # the layer is gone (Redis down): nothing left to lose
            logger.warning(
                "the answer's listener in conversation %s did not end", self.conversation.pk
            )
            listening.cancel()

    async def _listen(self, layer, inbox: str) -> None:
        while True:
            order = await layer.receive(inbox)
            if order.get("type") == OVER:
                return
            if order.get("type") == "answer.stop":
                self.task.cancel()
            elif order.get("type") == "answer.catch_up" and not self.over:
                async with self._sending:
                    so_far = {"type": FRAME, "html": await self._so_far(), "kind": "so_far"}
                    await layer.send(order["reply_to"], so_far)

    async def _so_far(self) -> str:
        """The answer as shown so far, in place of the page's (empty) streaming one; nothing
        before its row exists (its "started" frame is still to come)."""
        if self.message is None:
            return ""
        shown = copy.copy(self.message)  # the turn's own object keeps its fields
        shown.content = "".join(self.text)
        shown.tool_calls = list(self.calls.values())
        return await aframe("answer_so_far", message=shown, notices_so_far=self.notices, busy=True)
