"""The JSON API for scripts and tests: session-authenticated, CSRF-protected like the pages.

Bad input is a 400 naming the field and the reason: {"error": {"field", "reason"}}.
Other users' conversations are 404s. POST .../messages runs the assistant turn and answers
with both messages, or streams the turn's events as Server-Sent Events when the request
accepts text/event-stream (events named after chat.turn event kinds, data JSON).
Every write takes an `Idempotency-Key` header: a retry gets the first answer back and
changes nothing (chat/idempotency.py).
"""

from __future__ import annotations

import asyncio
import functools
import json

from asgiref.sync import sync_to_async
from django.db import transaction
from django.http import Http404, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.http import require_GET, require_http_methods

from chat import edge, idempotency, search, selectors, services
from chat.idempotency import idempotent
from chat.models import Conversation
from chat.turn import message_dict, run_turn


def _error(status, field, reason):
    return JsonResponse({"error": {"field": field, "reason": reason}}, status=status)


def _not_found():
    return JsonResponse({"error": {"field": "id", "reason": "no such conversation"}}, status=404)


def _unauthenticated():
    return JsonResponse({"error": {"field": None, "reason": "login required"}}, status=401)


def api_login_required(view):
    """401 JSON instead of a redirect to the login page: scripts want a status, not HTML."""

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        if not request.user.is_authenticated:
            return _unauthenticated()
        return view(request, *args, **kwargs)

    return wrapper


def _json_body(request) -> dict:
    return edge.parse_json(request.body, field="body")


def _unknown_fields(body: dict, allowed: set[str]):
    extra = sorted(set(body) - allowed)
    if extra:
        field = edge.field_name(extra[0])
        raise services.ChatInputError(field, f"unknown field; allowed: {sorted(allowed)}")


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


@require_http_methods(["GET", "POST"])
@api_login_required
@idempotent(atomic=True)
def conversations(request):
    try:
        if request.method == "GET":
            limit = _int_param(request, "limit", 50, 1, 200)
            offset = _int_param(request, "offset", 0, 0, 10**9)
            rows, has_more = selectors.sidebar_page(user=request.user, offset=offset, limit=limit)
            return JsonResponse(
                {"conversations": [conversation_dict(c) for c in rows], "has_more": has_more}
            )
        body = _json_body(request)
        _unknown_fields(body, {"title", "model"})
        title = body.get("title", "")
        if title is None:
            title = ""
        if not isinstance(title, str):
            raise services.ChatInputError("title", "must be a string")
        conversation = services.conversation_create(
            user=request.user, title=title, model=body.get("model") or ""
        )
    except services.ChatInputError as exc:
        return _error(400, exc.field, exc.reason)
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


@require_GET
@api_login_required
def conversation_search(request):
    """The user's messages matching `q`, best first: {"query", "results": [...]}."""
    try:
        query = _query_param(request)
        limit = _int_param(request, "limit", search.DEFAULT_LIMIT, 1, 50)
    except services.ChatInputError as exc:
        return _error(400, exc.field, exc.reason)
    hits = search.search_messages(user=request.user, query=query, limit=limit)
    return JsonResponse({"query": query, "results": [hit.as_dict() for hit in hits]})


@require_http_methods(["GET", "PATCH", "DELETE"])
@api_login_required
@idempotent(atomic=True)
def conversation_detail(request, pk):
    try:
        conversation = selectors.conversation_for_user(user=request.user, conversation_id=pk)
    except Http404:
        return _not_found()
    if request.method == "DELETE":
        conversation.delete()
        return HttpResponse(status=204)
    if request.method == "PATCH":
        try:
            body = _json_body(request)
            _unknown_fields(body, {"title", "pinned", "model"})
            services.conversation_update(
                conversation=conversation,
                title=body.get("title"),
                pinned=body.get("pinned"),
                model=body.get("model"),
            )
        except services.ChatInputError as exc:
            return _error(400, exc.field, exc.reason)
        conversation.refresh_from_db()
    messages = selectors.conversation_messages(conversation=conversation)
    return JsonResponse(
        {**conversation_dict(conversation), "messages": [message_dict(m) for m in messages]}
    )


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


@require_http_methods(["POST"])
@idempotent
async def conversation_messages(request, pk):
    user = await request.auser()
    if not user.is_authenticated:
        return _unauthenticated()
    try:
        conversation = await selectors.aconversation_for_user(user=user, conversation_id=pk)
    except Http404:
        return _not_found()
    try:
        # Parsing and checking a body of up to DATA_UPLOAD_MAX_MEMORY_SIZE is CPU work on
        # what a client sent: not on the event loop every other request shares.
        body = await asyncio.to_thread(_json_body, request)
        _unknown_fields(body, {"content", "model"})
        model = services.clean_model(body.get("model"))
        user_message, answered = await sync_to_async(_message_of)(
            request, conversation, body.get("content")
        )
    except services.ChatInputError as exc:
        return _error(400, exc.field, exc.reason)
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
