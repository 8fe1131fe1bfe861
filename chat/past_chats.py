"""Claude's look at the user's other chats: `conversation_search` and `recent_chats`.

A turn extension of chat's own (chat/extensions.py), listed in CHAT_TURN_EXTENSIONS like
memory's. Both tools answer from the user's own conversations only, never the one being
answered (its messages are already in the request, or in its summaries), with a link to
each chat so Claude can point the user to it. What the user marked `<private>` is never
read out (chat/private.py): a message found only by its private words is left out. They
are offered when the user's `reference_past_chats` preference is on and there is another
chat to look at.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, time

from asgiref.sync import sync_to_async
from django.db.models import Count
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from django.utils.translation import ngettext

from chat import search
from chat.extensions import ToolOutcome, TurnExtension
from chat.models import Conversation, ConversationSummary, Message, UserPreferences
from chat.private import has_private, strip_private
from chat.services import ChatInputError
from ikario_rag.text import fold_in_place

SEARCH_RESULTS = 8
MOST_RECENT = 20
PREVIEW_CHARS = 300  # of a chat's first message or summary, per chat listed
PASSAGE_CHARS = 160  # of a message with private spans, around the words found

GUIDE = (
    "<past_chats>\nThe user's other conversations with you can be searched "
    "(conversation_search) and listed (recent_chats). Use them when the user refers to "
    "something discussed before that is not in this conversation; when you draw on a chat, "
    "give its url as a Markdown link.\n</past_chats>"
)

TOOLS = [
    {
        "name": "conversation_search",
        "description": "Search the user's past conversations with you (not this one) for "
        "words that were written in them. Every word must appear. Returns matching passages, "
        "best first, each with its chat's title, date and url.",
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "Words to look for: names, places, topics",
                }
            },
            "required": ["query"],
        },
    },
    {
        "name": "recent_chats",
        "description": "List the user's most recent conversations with you (not this one), "
        "newest first, each with its title, url, last activity and how it began. Optionally "
        "only chats last active before and/or after a date.",
        "input_schema": {
            "type": "object",
            "properties": {
                "n": {"type": "integer", "minimum": 1, "maximum": MOST_RECENT, "default": 5},
                "before": {
                    "type": "string",
                    "description": "ISO 8601 date or date-time: chats last active before it",
                },
                "after": {
                    "type": "string",
                    "description": "ISO 8601 date or date-time: chats last active after it",
                },
            },
        },
    },
]


async def prepare_turn(*, user, conversation, user_message) -> TurnExtension:
    """The two tools, when the user allows them and has another chat to look at."""
    if conversation.incognito:
        return TurnExtension()  # an incognito chat looks at nothing else
    prefs = await UserPreferences.objects.filter(user=user).afirst()
    if prefs is not None and not prefs.reference_past_chats:
        return TurnExtension()
    others = Conversation.objects.filter(user=user, incognito=False).exclude(pk=conversation.pk)
    if not await others.aexists():
        return TurnExtension()
    return TurnExtension(
        system_blocks=[GUIDE], tools=TOOLS, execute_tool=make_executor(user, conversation)
    )


prepare_turn.failure_notice = "Past chats unavailable: answering without them."


def make_executor(user, conversation):
    async def execute(name: str, tool_input: dict) -> ToolOutcome:
        data = tool_input if isinstance(tool_input, dict) else {}
        try:
            if name == "conversation_search":
                return await sync_to_async(_conversation_search)(user, conversation, data)
            if name == "recent_chats":
                return await sync_to_async(_recent_chats)(user, conversation, data)
        except ChatInputError as exc:
            body = {"error": {"field": exc.field, "reason": exc.reason}}
            return ToolOutcome(
                content=json.dumps(body), is_error=True, summary=f"{name}: {exc.field} {exc.reason}"
            )
        return ToolOutcome(content=f"Unknown tool: {name}", is_error=True, summary=name)

    return execute


def _conversation_search(user, conversation, data) -> ToolOutcome:
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ChatInputError("query", "must be a non-empty string")
    hits = search.search_messages(
        user=user, query=query, limit=SEARCH_RESULTS, exclude_conversation_id=conversation.pk
    )
    contents = dict(
        Message.objects.filter(pk__in=[h.message_id for h in hits]).values_list("id", "content")
    )
    results = []
    for hit in hits:
        passage = _visible_passage(hit, contents.get(hit.message_id, ""), query)
        if passage is None:  # it matched only what the user marked private
            continue
        results.append(
            {
                "chat": strip_private(hit.conversation_title),
                "url": hit.url,
                "date": hit.created_at.date().isoformat(),
                "from": hit.role,
                "passage": passage,
            }
        )
    content = json.dumps({"results": results}, ensure_ascii=False)
    summary = ngettext(
        "Searched your chats for %(query)s — %(count)d result",
        "Searched your chats for %(query)s — %(count)d results",
        len(results),
    ) % {"query": _quoted(query), "count": len(results)}
    return ToolOutcome(content=content, summary=summary)


def _visible_passage(hit, content: str, query: str) -> str | None:
    """The hit's passage, or, for a message with private spans, one cut from what is not
    private (None when the query's words are only in the private part)."""
    if not has_private(content):
        return hit.snippet
    visible = " ".join(strip_private(content).split())
    folded = _fold(visible)
    starts = []
    for term in search.search_terms(query):
        found = re.search(rf"(?<!\w){re.escape(_fold(term))}", folded)
        if found is None:
            return None
        starts.append(found.start())
    begin = max(0, min(starts) - PASSAGE_CHARS // 3)
    passage = _cut(visible[begin:], PASSAGE_CHARS)
    return ("…" if begin else "") + passage


def _fold(text: str) -> str:
    """Lower case without accents, one character per character (positions carry over)."""
    return fold_in_place(text)


def _recent_chats(user, conversation, data) -> ToolOutcome:
    n = data.get("n", 5)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MOST_RECENT:
        raise ChatInputError("n", f"must be an integer from 1 to {MOST_RECENT}")
    before, after = _moment(data, "before"), _moment(data, "after")
    if before and after and after >= before:
        raise ChatInputError("after", "must be earlier than before")
    chats = Conversation.objects.filter(user=user, incognito=False).exclude(pk=conversation.pk)
    if before:
        chats = chats.filter(updated_at__lt=before)
    if after:
        chats = chats.filter(updated_at__gt=after)
    chats = chats.annotate(message_count=Count("messages")).order_by("-updated_at", "-id")
    listed = [_chat_record(chat) for chat in chats[:n]]
    summary = ngettext(
        "Looked at your recent chats — %(count)d chat",
        "Looked at your recent chats — %(count)d chats",
        len(listed),
    ) % {"count": len(listed)}
    return ToolOutcome(content=json.dumps({"chats": listed}, ensure_ascii=False), summary=summary)


def _moment(data: dict, field: str) -> datetime | None:
    raw = data.get(field)
    if raw is None or raw == "":
        return None
    moment = None
    if isinstance(raw, str) and len(raw) <= 40:
        try:
            moment = parse_datetime(raw)
            if moment is None and (day := parse_date(raw)) is not None:
                moment = datetime.combine(day, time.min)
        except ValueError:  # well-formed but impossible, like 2026-02-30
            moment = None
    if moment is None:
        raise ChatInputError(field, "must be an ISO 8601 date (2026-03-01) or date-time")
    if timezone.is_naive(moment):
        moment = timezone.make_aware(moment)
    return moment


def _chat_record(chat: Conversation) -> dict:
    summaries = ConversationSummary.objects.filter(conversation=chat, parent=None).order_by(
        "first_message_id"
    )
    gist = " ".join(s.text for s in summaries)
    if not gist:
        first = (
            Message.objects.filter(conversation=chat, role=Message.Role.USER)
            .order_by("id")
            .values_list("content", flat=True)
            .first()
        )
        gist = strip_private(first or "")
    record = {
        "title": strip_private(chat.title),
        "url": reverse("chat:conversation", args=[chat.pk]),
        "last_active": chat.updated_at.isoformat(),
        "messages": chat.message_count,
        "gist": _cut(" ".join(gist.split()), PREVIEW_CHARS),
    }
    if chat.source:  # had with another assistant, imported from its export
        record["imported_from"] = chat.get_source_display()
    return record


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _quoted(text: str, limit: int = 60) -> str:
    return "'" + _cut(" ".join(text.split()), limit) + "'"
