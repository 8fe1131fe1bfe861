"""The conversations' JSON API (a router of the one API, ikario_clone/api.py), for scripts
and tests: session-authenticated, CSRF-protected like the pages.

Bad input is a 400 naming the field (the API's one error shape, core/errors.py).
Other users' conversations are 404s. POST .../messages runs the assistant turn and answers
with both messages, or streams the turn's events as Server-Sent Events when the request
accepts text/event-stream (events named after chat.turn event kinds, data JSON).
Every write takes an `Idempotency-Key` header: a retry gets the first answer back and
changes nothing (chat/idempotency.py).
"""

# No `from __future__ import annotations`: ninja reads the views' annotations through their
# decorators, where string annotations would not resolve.
import asyncio
import json

from asgiref.sync import sync_to_async
from django.db import transaction
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from ninja import Router
from ninja.errors import ValidationError
from pydantic import BaseModel, ConfigDict
from pydantic import ValidationError as SchemaError

from chat import edge, idempotency, search, selectors, services
from chat.idempotency import idempotent
from chat.models import Conversation
from chat.turn import message_dict, run_turn
from core.errors import problem

router = Router(tags=["conversations"])


class Body(BaseModel):
    """Strict types (a "true" is not a true), no field but these; the services check the
    rest (lengths, known models, storable text)."""

    model_config = ConfigDict(strict=True, extra="forbid")


class NewConversation(Body):
    title: str | None = None
    model: str | None = None


class ConversationChange(Body):
    title: str | None = None
    pinned: bool | None = None
    model: str | None = None


class NewMessage(Body):
    content: str | None = None
    model: str | None = None


def _not_found():
    return problem(404, "id", "no such conversation")


def conversation_dict(conversation: Conversation) -> dict:
    return {
        "id": conversation.pk,
        "title": conversation.title,
        "model": conversation.model,
        "pinned": conversation.pinned,
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
    }


def _int_param(request, name, default, low, high):
    return edge.int_param(name, request.GET.get(name), default=default, low=low, high=high)


@router.get("conversations")
def conversations(request, limit: str | None = None, offset: str | None = None):
    """The user's conversations, `limit` (1-200, default 50) from `offset`:
    {"conversations": [...], "has_more"}."""
    limit = _int_param(request, "limit", 50, 1, 200)
    offset = _int_param(request, "offset", 0, 0, 10**9)
    rows, has_more = selectors.sidebar_page(user=request.user, offset=offset, limit=limit)
    return JsonResponse(
        {"conversations": [conversation_dict(c) for c in rows], "has_more": has_more}
    )


@router.post("conversations")
@idempotent(atomic=True)
def conversation_create(request, payload: NewConversation):
    """A new conversation: 201, the conversation."""
    conversation = services.conversation_create(
        user=request.user, title=payload.title or "", model=payload.model or ""
    )
    return JsonResponse(conversation_dict(conversation), status=201)


def _query_param(request) -> str:
    query = request.GET.get("q")
    if query is None:
        raise services.ChatInputError("q", "is required")
    if not query.strip():
        raise services.ChatInputError("q", "must not be empty")
    if len(query) > search.MAX_QUERY_CHARS:
        raise services.ChatInputError("q", f"must be at most {search.MAX_QUERY_CHARS} characters")
    return query


@router.get("conversations/search")
def conversation_search(request, q: str | None = None, limit: str | None = None):
    """The user's messages matching `q` (1-1000 characters), best first, `limit` of them
    (1-50, default 20): {"query", "results": [{"message_id", "conversation_id",
    "conversation_title", "role", "created_at", "snippet", "snippet_html", "url"}]};
    `snippet_html` is escaped, `<mark>` its only markup."""
    query = _query_param(request)
    limit = _int_param(request, "limit", search.DEFAULT_LIMIT, 1, 50)
    hits = search.search_messages(user=request.user, query=query, limit=limit)
    return JsonResponse({"query": query, "results": [hit.as_dict() for hit in hits]})


def _with_messages(conversation: Conversation) -> JsonResponse:
    messages = selectors.conversation_messages(conversation=conversation)
    return JsonResponse(
        {**conversation_dict(conversation), "messages": [message_dict(m) for m in messages]}
    )


def _conversation(request, pk: int) -> Conversation | None:
    try:
        return selectors.conversation_for_user(user=request.user, conversation_id=pk)
    except Http404:
        return None


@router.get("conversations/{int:pk}")
def conversation_detail(request, pk: int):
    """A conversation and its messages."""
    conversation = _conversation(request, pk)
    return _not_found() if conversation is None else _with_messages(conversation)


@router.patch("conversations/{int:pk}")
@idempotent(atomic=True)
def conversation_change(request, pk: int, payload: ConversationChange):
    """Rename, pin or unpin, or change the model: the fields sent."""
    conversation = _conversation(request, pk)
    if conversation is None:
        return _not_found()
    services.conversation_update(
        conversation=conversation,
        title=payload.title,
        pinned=payload.pinned,
        model=payload.model,
    )
    conversation.refresh_from_db()
    return _with_messages(conversation)


@router.delete("conversations/{int:pk}")
@idempotent(atomic=True)
def conversation_delete(request, pk: int):
    """Delete a conversation and its messages: 204."""
    conversation = _conversation(request, pk)
    if conversation is None:
        return _not_found()
    conversation.delete()
    return HttpResponse(status=204)


ANSWERED_SINCE = (
    "this key's message was saved, then the conversation went on before it was answered: "
    "it is not answered again"
)


def _message_of(request, conversation, content):
    """(the user's message, its finished answer or None): saved now, or, for a retry whose
    first attempt died, the one that attempt saved, found by its claim."""
    # The message and its record on the key's claim: both saved or neither.
    with transaction.atomic():
        if getattr(request, "idempotent_rerun", False):
            message, answered = services.message_again(
                conversation=conversation,
                content=content,
                saved_id=idempotency.saved_message_id(request),
            )
        else:
            message, answered = (
                services.message_send(conversation=conversation, content=content),
                None,
            )
        idempotency.note_saved(request, message)
    return message, answered


def _sse(event: str, data: dict) -> str:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n"


def _new_message(request) -> NewMessage:
    """The body, parsed and checked against its schema (off the event loop: see below)."""
    return NewMessage.model_validate(edge.parse_json(request.body, field="body"))


# The body is read here rather than by the API: parsing and checking one of up to
# DATA_UPLOAD_MAX_MEMORY_SIZE is CPU work on what a client sent, not for the event loop
# every other request shares.
NEW_MESSAGE_BODY = {
    "requestBody": {
        "content": {"application/json": {"schema": NewMessage.model_json_schema()}},
        "required": True,
    }
}


@router.post("conversations/{int:pk}/messages", openapi_extra=NEW_MESSAGE_BODY)
@idempotent
async def conversation_messages(request, pk: int):
    """Send a message and run the assistant's turn: 201 {"user_message",
    "assistant_message": {"id", "content", "tool_calls", ...}}; 502 with `"error"` when
    the model's API failed (the question is kept). With `Accept: text/event-stream`, the
    turn's events as Server-Sent Events: `user_message`, `started`, `notice`, `text`,
    `tool_started`, `tool_finished`, then `done` or `error`. A retry (same
    Idempotency-Key) whose first attempt died answers the message that attempt saved; if
    the conversation went on before it was answered: 409 with its `user_message`."""
    user = await request.auser()
    try:
        conversation = await selectors.aconversation_for_user(user=user, conversation_id=pk)
    except Http404:
        return _not_found()
    try:
        body = await asyncio.to_thread(_new_message, request)
        model = services.clean_model(body.model)
        user_message, answered = await sync_to_async(_message_of)(
            request, conversation, body.content
        )
    except SchemaError as exc:
        raise ValidationError(exc.errors()) from None  # answered as the API's other 400s
    except services.AnsweredSince as since:
        return JsonResponse(
            {
                "error": {"field": idempotency.HEADER, "reason": ANSWERED_SINCE},
                "user_message": message_dict(since.message),
            },
            status=409,
        )
    if answered is not None:  # the first attempt finished: its answer, not another
        payload = {
            "user_message": message_dict(user_message),
            "assistant_message": message_dict(answered),
        }
        return JsonResponse(payload, status=201)
    conversation.user = user
    events = run_turn(conversation=conversation, user_message=user_message, model=model or None)

    if "text/event-stream" in request.headers.get("Accept", ""):

        async def stream():
            yield _sse("user_message", message_dict(user_message))
            async for event in events:
                yield _sse(event.kind, event.as_dict())

        response = StreamingHttpResponse(stream(), content_type="text/event-stream")
        response["Cache-Control"] = "no-cache"
        response["X-Accel-Buffering"] = "no"
        return response

    final = None
    async for event in events:
        if event.kind in ("done", "error"):
            final = event
    payload = {
        "user_message": message_dict(user_message),
        "assistant_message": message_dict(final.message),
    }
    if final.kind == "error":
        payload["error"] = final.error
        return JsonResponse(payload, status=502)
    return JsonResponse(payload, status=201)
