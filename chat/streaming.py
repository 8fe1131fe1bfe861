"""Who is writing a "streaming" answer, kept in its row so every process can see it.

A turn marks its assistant message with this process's identity (a random token, the
host and the pid) and refreshes `stream_heartbeat` while it runs. Any process can then
tell an answer still being written from one abandoned by a stopped or crashed process,
and settle the abandoned one as "stopped" (with Retry), never another live process's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import uuid
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from chat.models import Message
from core import processes

logger = logging.getLogger(__name__)

# Answers whose turn runs in this process right now.
_running: set[int] = set()
_identity: tuple[int, str] | None = None


def heartbeat_every() -> float:
    return float(settings.CHAT_STREAM_HEARTBEAT)


def stale_after() -> float:
    return float(settings.CHAT_STREAM_STALE_AFTER)


def process_token() -> str:
    """This process's token (a new one after a fork: the child is another writer)."""
    global _identity
    pid = os.getpid()
    if _identity is None or _identity[0] != pid:
        _identity = (pid, uuid.uuid4().hex)
    return _identity[1]


def owner_fields() -> dict:
    """What a new streaming answer records about the process writing it."""
    return {
        "stream_token": process_token(),
        "stream_host": processes.this_host(),
        "stream_pid": os.getpid(),
        "stream_heartbeat": timezone.now(),
    }


def is_abandoned(message: Message, *, now=None) -> bool:
    """True when nobody is writing this "streaming" answer any more."""
    if message.status != Message.Status.STREAMING:
        return False
    if message.stream_token == process_token():
        return message.pk not in _running
    if message.stream_heartbeat is None:
        return True  # written before owners were recorded, or by a process that never said
    if processes.dead(message.stream_host, message.stream_pid):
        return True
    now = now or timezone.now()
    return now - message.stream_heartbeat > timedelta(seconds=stale_after())


async def _beat(message_id: int) -> None:
    while True:
        await asyncio.sleep(heartbeat_every())
        try:
            await Message.objects.filter(pk=message_id, status=Message.Status.STREAMING).aupdate(
                stream_heartbeat=timezone.now()
            )
        except Exception:  # a busy database must not end the answer
            logger.warning("heartbeat of message %s failed", message_id, exc_info=True)


@contextlib.asynccontextmanager
async def writing(message: Message):
    """While the block runs, this process writes `message`: known here, and heartbeating."""
    _running.add(message.pk)
    beat = asyncio.create_task(_beat(message.pk))
    try:
        yield
    finally:
        beat.cancel()
        _running.discard(message.pk)


def shown_as_stopped(messages) -> None:
    """Read-only: every answer of `messages` nobody writes any more reads as stopped on the
    page (a GET writes nothing; the row is settled by the page's socket or the next turn)."""
    for message in messages:
        if is_abandoned(message):
            message.status = Message.Status.STOPPED


def settle_abandoned_in(conversation_id: int) -> list[int]:
    """Settle as "stopped" every answer of the conversation nobody writes any more, wherever
    it stands (a process that died mid-answer, then the chat went on): the ids settled."""
    settled = []
    for message in Message.objects.filter(
        conversation_id=conversation_id, status=Message.Status.STREAMING
    ):
        still_streaming = Message.objects.filter(pk=message.pk, status=Message.Status.STREAMING)
        if is_abandoned(message) and still_streaming.update(status=Message.Status.STOPPED):
            settled.append(message.pk)
    if settled:
        logger.info("answers %s of conversation %s settled as stopped", settled, conversation_id)
    return settled
