"""The chat socket's frames: named partials of templates/chat/stream.html (autoescaped) whose
top-level elements carry hx-swap-oob, so htmx puts each piece in its place."""

from __future__ import annotations

import asyncio

from asgiref.sync import sync_to_async
from django.template.loader import render_to_string

from chat.markdown import render_markdown
from chat.models import Message


def frame(partial: str, **context) -> str:
    """One WebSocket frame: a named partial of chat/stream.html, autoescaped."""
    return render_to_string(f"chat/stream.html#{partial}", context).strip()


# Frames that render a whole message run other apps' slot templates: off the event loop.
aframe = sync_to_async(frame)


async def settled_frame(message: Message, **context) -> str:
    """A finished answer's frame. Its Markdown (a long answer is milliseconds of CPU) is
    rendered first in a worker thread, not in the thread-sensitive executor that every
    request's ORM calls share; the template then reads it from render_markdown's cache."""
    await asyncio.to_thread(render_markdown, message.content or "")
    return await aframe("answer_settled", message=message, **context)
