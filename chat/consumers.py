"""The chat WebSocket: the htmx ws extension sends the composer, we stream the answer back.

Every frame sent is a named partial of templates/chat/stream.html (autoescaped) whose
top-level elements carry hx-swap-oob, so htmx puts each piece in its place: the user's
message, the answer's tokens, tool calls, notices, and finally the answer rendered as
sanitised Markdown. The consumer only parses, calls services and run_turn, renders and
sends. The turn runs as a task so "stop" (or a closed socket) can cancel it; the partial
answer is then kept.

Client frames (JSON, from ws-send): {"action": "send", "content"} (the default action),
{"action": "stop"}, {"action": "retry", "message_id"}.

Every page's socket also carries the user's UI events (chat/events.py): the conversation
page's, and on the new-chat page `UserEventsConsumer`'s, which does nothing else.
"""

from __future__ import annotations

import asyncio
import logging

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import Http404
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import trans_real

from chat import edge, events, incognito, selectors, services, streaming
from chat.markdown import render_markdown
from chat.models import Conversation, Message
from chat.turn import run_turn

logger = logging.getLogger(__name__)


def frame(partial: str, **context) -> str:
    """One WebSocket frame: a named partial of chat/stream.html, autoescaped."""
    return render_to_string(f"chat/stream.html#{partial}", context).strip()


# Frames that render a whole message run other apps' slot templates: off the event loop.
aframe = sync_to_async(frame)


def socket_language(scope) -> str:
    """The page's language for this socket, chosen as LocaleMiddleware chooses it for a
    request: the Settings page's cookie, else the browser's Accept-Language."""
    chosen = (scope.get("cookies") or {}).get(settings.LANGUAGE_COOKIE_NAME)
    candidates = [chosen] if chosen else []
    for name, value in scope.get("headers") or []:
        if name == b"accept-language":
            header = value.decode("latin-1")
            candidates += [code for code, _q in trans_real.parse_accept_lang_header(header)]
    for code in candidates:
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


async def settled_frame(message: Message, **context) -> str:
    """A finished answer's frame. Its Markdown (a long answer is milliseconds of CPU) is
    rendered first in a worker thread, not in the thread-sensitive executor that every
    request's ORM calls share; the template then reads it from render_markdown's cache."""
    await asyncio.to_thread(render_markdown, message.content or "")
    return await aframe("answer_settled", message=message, **context)


class UserEventsConsumer(AsyncWebsocketConsumer):
    """A signed-in page's socket: it forwards the user's UI events (chat/events.py)."""

    async def connect(self):
        self.user = self.scope.get("user")
        if not self.user or not self.user.is_authenticated:
            await self.close(code=4401)
            return
        await self.accept()
        await self.join_user_events()

    async def join_user_events(self):
        events.socket_loop_is(asyncio.get_running_loop())
        if self.channel_layer is not None:
            await self.channel_layer.group_add(events.user_group(self.user.pk), self.channel_name)

    async def disconnect(self, code):
        await self.leave_user_events()

    async def leave_user_events(self):
        user = getattr(self, "user", None)
        if self.channel_layer is not None and user is not None and user.is_authenticated:
            await self.channel_layer.group_discard(events.user_group(user.pk), self.channel_name)

    async def ui_event(self, event):
        if event.get("html"):
            await self.send(text_data=event["html"])


class ChatConsumer(UserEventsConsumer):
    conversation = None

    async def connect(self):
        # Kept for the socket's life: its frames, errors and the turn (a task copies it).
        translation.activate(socket_language(self.scope))
        self.user = self.scope.get("user")
        self.task: asyncio.Task | None = None
        if not self.user or not self.user.is_authenticated:
            await self.close(code=4401)
            return
        try:
            self.conversation = await selectors.aconversation_for_user(
                user=self.user, conversation_id=self.scope["url_route"]["kwargs"]["pk"]
            )
        except Http404:
            await self.close(code=4404)
            return
        self.conversation.user = self.user
        await self.accept()
        await self.join_user_events()
        if self.conversation.incognito:
            await incognito.opened(self.conversation)
        await self._settle_interrupted()
        # A message sent from the new-chat page (or left unanswered) is answered now.
        pending = await sync_to_async(selectors.pending_user_message)(self.conversation)
        if pending is not None:
            self._start(pending)

    async def _settle_interrupted(self):
        """An answer nobody writes any more (its process stopped or died) is shown as
        stopped, with Retry; one another live process still writes is left alone."""
        last = (
            await Message.objects.filter(conversation=self.conversation)
            .order_by("-created_at", "-id")
            .afirst()
        )
        if last and await streaming.asettle_if_abandoned(last):
            await self.send(text_data=await settled_frame(last))

    async def disconnect(self, code):
        if self.task and not self.task.done():
            self.task.cancel()
            if self.conversation is not None and self.conversation.incognito:
                # The stopped answer is saved before the chat's grace period starts.
                await asyncio.wait([self.task], timeout=10)
        await self.leave_user_events()
        if self.conversation is not None and self.conversation.incognito:
            incognito.closed(self.conversation)

    async def receive(self, text_data=None, bytes_data=None):
        # A frame is most often a message to answer: background work steps aside from its
        # arrival, before it is even parsed, until the turn ends (chat/streaming.py); at
        # once again if it asks for no answer.
        coming = streaming.ReplyComing()
        try:
            message = await self._message_to_answer(text_data)
        except BaseException:
            coming.release()
            raise
        if message is None:
            coming.release()
            return
        self._start(message, coming)

    async def _message_to_answer(self, text_data) -> Message | None:
        """The user's message the frame asks to answer (sent, or retried), or None once the
        frame has been dealt with otherwise (a stop, or an error said)."""
        if text_data is None:
            await self._say_error(_("That message could not be read: send JSON text frames."))
            return None
        try:
            # Up to a megabyte of what a client sent: parsed off the event loop.
            data = await asyncio.to_thread(edge.parse_json, text_data, field="body")
        except services.ChatInputError as exc:
            await self._say_error(
                _("That message could not be read: %(field)s %(reason)s.")
                % {"field": exc.field, "reason": exc.reason}
            )
            return None
        action = data.get("action") or "send"
        if action == "stop":
            if self.task and not self.task.done():
                self.task.cancel()
            return None
        if self.task and not self.task.done():
            await self._say_error(_("Wait for the answer to finish, or press Stop."))
            return None
        if action not in ("send", "retry"):
            await self._say_error(_("Unknown action."))
            return None
        if self.conversation.incognito and not await self._still_there():
            await self._say_error(_("This incognito chat has ended. Start a new chat."))
            return None
        try:
            return await self._accept(action, data)
        except services.ChatInputError as exc:
            await self._say_error(exc.sentence())
            return None

    async def _accept(self, action: str, data: dict) -> Message:
        """The user's message to answer: sent now, or the one a retry answers again."""
        if action == "send":
            message = await sync_to_async(services.message_send)(
                conversation=self.conversation, content=data.get("content")
            )
            await self.send(
                text_data=await aframe(
                    "user_message", message=message, conversation=self.conversation
                )
            )
            return message
        removed = edge.identifier("message_id", data.get("message_id"))
        message = await sync_to_async(services.message_retry)(
            conversation=self.conversation, message_id=removed
        )
        await self.send(text_data=frame("message_removed", message_id=removed))
        return message

    async def _still_there(self) -> bool:
        return await Conversation.objects.filter(pk=self.conversation.pk).aexists()

    async def _say_error(self, text: str):
        await self.send(text_data=frame("composer_error", text=text))

    def _start(self, user_message: Message, coming: streaming.ReplyComing | None = None):
        coming = coming or streaming.ReplyComing()
        self.task = asyncio.create_task(self._stream(user_message))
        # Released however the task ends, even cancelled before its first step (a finally
        # in _stream would not run then).
        self.task.add_done_callback(lambda _task: coming.release())

    async def _stream(self, user_message: Message):
        message = None
        started: dict[str, dict] = {}
        try:
            async for event in run_turn(conversation=self.conversation, user_message=user_message):
                kind = event.kind
                if kind == "started":
                    message = event.message
                    html = await aframe("answer_started", message=message, busy=True)
                elif kind == "text":
                    html = frame("text_delta", message_id=message.pk, text=event.text)
                elif kind == "notice":
                    html = frame("notice", message_id=message.pk, text=event.text)
                elif kind == "tool_started":
                    started[event.id] = {"name": event.name, "input": event.input}
                    call = {"id": event.id, "name": event.name, "input": event.input}
                    html = frame("tool_started", message_id=message.pk, call=call)
                elif kind == "tool_finished":
                    call = {**started.get(event.id, {}), **event.as_dict(), "done": True}
                    html = frame("tool_finished", call=call)
                elif kind in ("done", "error"):
                    html = await settled_frame(event.message, turn_over=True, busy=False)
                else:
                    continue
                await self.send(text_data=html)
        except asyncio.CancelledError:
            # run_turn saved the partial answer as "stopped": show it as it now is.
            if message is not None:
                await message.arefresh_from_db()
                html = await settled_frame(message, turn_over=True, busy=False)
                try:
                    await self.send(text_data=html)
                except Exception:  # the socket may already be gone
                    logger.debug("could not send the stopped message", exc_info=True)
            raise
        except Exception:
            logger.exception("streaming failed in conversation %s", self.conversation.pk)
            await self.send(text_data=frame("turn_state", busy=False))
            await self._say_error(_("The answer could not be streamed. Reload the page."))
