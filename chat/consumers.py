"""The chat WebSocket: the htmx ws extension sends the composer, we stream the answer back.

Every frame sent is a named partial of templates/chat/stream.html (chat/frames.py) whose
top-level elements carry hx-swap-oob, so htmx puts each piece in its place: the user's
message, the answer's tokens, tool calls, notices, and finally the answer rendered as
sanitised Markdown. The consumer only parses, calls services, starts the answer and
forwards frames. The answer is the process's, not the socket's (chat/answers.py): a page
left or reloaded does not stop it, Stop does, from any page of the conversation. Every page
of a conversation shows what happens in it (the conversation's group), and one that opens
while an answer is being written is sent the answer so far, then follows it.

Client frames (JSON, from ws-send): {"action": "send", "content"} (the default action),
{"action": "stop"}, {"action": "retry", "message_id"}.

Every page's socket also carries the user's UI events (chat/events.py): the conversation
page's, and on the new-chat page `UserEventsConsumer`'s, which does nothing else.
"""

from __future__ import annotations

import asyncio
import logging
from urllib.parse import parse_qs

from asgiref.sync import sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http import Http404
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import trans_real

from chat import answers, edge, events, incognito, selectors, services, streaming
from chat.frames import aframe, frame, settled_frame
from chat.models import Conversation, Message
from core.errors import SOCKET_DATABASE_AWAY, database_away

logger = logging.getLogger(__name__)


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

    async def dispatch(self, message):
        try:
            await super().dispatch(message)
        except Exception as exc:
            if database_away(exc):
                # The socket ends here (core.errors.SocketOutage closes it): what
                # disconnect() undoes (groups joined, an incognito chat held open) is undone.
                await self.disconnect(SOCKET_DATABASE_AWAY)
            raise

    async def leave_user_events(self):
        user = getattr(self, "user", None)
        if self.channel_layer is not None and user is not None and user.is_authenticated:
            await self.channel_layer.group_discard(events.user_group(user.pk), self.channel_name)

    async def ui_event(self, event):
        if event.get("html"):
            await self.send(text_data=event["html"])


class ChatConsumer(UserEventsConsumer):
    conversation = None
    # True from asking the answer being written for what it has so far until that comes:
    # the frames of it that arrive before are in it.
    catching_up = False

    async def connect(self):
        # Kept for the socket's life: its frames, errors and the answers it starts (a task
        # copies it).
        translation.activate(socket_language(self.scope))
        self.user = self.scope.get("user")
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
        # Joined before the last message is read: nothing said from then on is missed.
        group = answers.conversation_group(self.conversation.pk)
        await self.channel_layer.group_add(group, self.channel_name)
        if self.conversation.incognito:
            await incognito.opened(self.conversation)
        await self._show_the_last_answer()
        # A message sent from the new-chat page (or left unanswered) is answered now.
        pending = await sync_to_async(selectors.pending_user_message)(self.conversation)
        if pending is not None and answers.start(self.conversation, pending) is None:
            # Another page here has just started answering it: follow that answer.
            self.catching_up = True
            await answers.catch_up(self.conversation.pk, self.channel_name)

    async def _show_the_last_answer(self):
        """Bring the page's last answer up to date: one being written is followed (its text
        so far first); one nobody writes any more (its process stopped or died) is shown as
        stopped, with Retry; one the page showed being written and now over is shown."""
        # Every answer a dead process left "streaming" is settled, not only the last one.
        settled = await sync_to_async(streaming.settle_abandoned_in)(self.conversation.pk)
        last = (
            await Message.objects.filter(conversation=self.conversation)
            .order_by("-created_at", "-id")
            .afirst()
        )
        if last is None or last.role != Message.Role.ASSISTANT:
            return
        if last.pk in settled:
            await self.send(text_data=await settled_frame(last))
        elif last.status == Message.Status.STREAMING:
            self.catching_up = True
            await answers.catch_up(self.conversation.pk, self.channel_name)
        elif last.pk == self._followed_on_the_page():
            await self.send(text_data=await settled_frame(last, turn_over=True, busy=False))

    def _followed_on_the_page(self) -> int | None:
        """The answer the page was rendered with while it was being written (?following=)."""
        query = parse_qs((self.scope.get("query_string") or b"").decode("latin-1"))
        raw = (query.get("following") or [""])[0]
        return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 19 else None

    async def chat_frame(self, event):
        """A frame of the conversation (chat/answers.py), for this page."""
        kind = event["kind"]
        if self.catching_up and kind in answers.CAUGHT_UP_BY_SO_FAR:
            return
        if kind in ("so_far", "settled"):
            self.catching_up = False
        if event["html"]:
            await self.send(text_data=event["html"])

    async def disconnect(self, code):
        # The answer being written goes on (chat/answers.py): only this page stops showing it.
        if self.conversation is not None and self.channel_layer is not None:
            group = answers.conversation_group(self.conversation.pk)
            await self.channel_layer.group_discard(group, self.channel_name)
        await self.leave_user_events()
        if self.conversation is not None and self.conversation.incognito:
            incognito.closed(self.conversation)

    async def receive(self, text_data=None, bytes_data=None):
        message = await self._message_to_answer(text_data)
        if message is None:
            return
        answers.start(self.conversation, message)

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
            await answers.stop(self.conversation.pk)
            return None
        if await answers.being_written(self.conversation):
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
        """The user's message to answer: sent now, or the one a retry answers again. Every
        page of the conversation shows it."""
        pk = self.conversation.pk
        if action == "send":
            message = await sync_to_async(services.message_send)(
                conversation=self.conversation, content=data.get("content")
            )
            html = await aframe("user_message", message=message, conversation=self.conversation)
            await answers.tell(pk, html, "message")
            return message
        removed = edge.identifier("message_id", data.get("message_id"))
        message = await sync_to_async(services.message_retry)(
            conversation=self.conversation, message_id=removed
        )
        await answers.tell(pk, frame("message_removed", message_id=removed), "message")
        return message

    async def _still_there(self) -> bool:
        return await Conversation.objects.filter(pk=self.conversation.pk).aexists()

    async def _say_error(self, text: str):
        await self.send(text_data=frame("composer_error", text=text))
