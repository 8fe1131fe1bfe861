"""The memory's JSON API under /api/memory/: search, add, evolution, consistency, stats,
recent, get, delete and forget, the settings, the retrieval log and facts.

Session auth with CSRF (Django's middleware checks every POST and DELETE). Every error is
JSON: 400 names the field, 401 for anonymous callers, 404 for another user's or an unknown
memory, 409 {"error": "memory is off for this account"} when the user turned memory off
(every endpoint), 429 (with Retry-After, "limit" naming the setting) over the user's fair
share (memory/client/limits.py), 503 (with Retry-After) when the memory server is down or memory
is disabled on the server. Nothing a client sends gives a 500, and no error says more than
"memory unavailable" (with the server's one-line reason): details go to the log. Every
write takes an `Idempotency-Key` header (chat/idempotency.py): a retry changes nothing.
"""

from __future__ import annotations

import functools
import logging

from django.http import HttpRequest, JsonResponse

from chat import edge
from chat.edge import field_name
from chat.idempotency import idempotent
from ikario_rag import contract
from memory.client import jobs, limits, services, user_settings
from memory.client import validation as check
from memory.client.errors import (
    MemoryBusy,
    MemoryDisabled,
    MemoryInputError,
    MemoryNotFound,
    MemoryOff,
    MemoryServiceError,
    MemoryUnavailable,
)
from memory.models import MemoryJob, MemoryRetrieval, MemorySettings

logger = logging.getLogger("memory.api.views")

ADD_MESSAGES = {
    "created": "Memory saved",
    "updated": "Memory updated",
    "duplicate": "Already in memory",
}


def error_response(exc: MemoryServiceError) -> JsonResponse:
    """The JSON (and status) a memory error becomes; the HTML panels reuse the mapping."""
    body = {"error": exc.message, "status": exc.status}
    if isinstance(exc, MemoryInputError):
        return JsonResponse({**body, "field": exc.field}, status=400)
    if isinstance(exc, MemoryNotFound):
        return JsonResponse(body, status=404)
    if isinstance(exc, MemoryOff):
        return JsonResponse(body, status=409)
    if isinstance(exc, MemoryDisabled):
        return JsonResponse(body, status=503)
    if isinstance(exc, MemoryBusy | MemoryUnavailable):
        body["retry_after"] = exc.retry_after
        if isinstance(exc, MemoryBusy):
            body["limit"] = exc.limit
        response = JsonResponse(body, status=429 if isinstance(exc, MemoryBusy) else 503)
        response["Retry-After"] = str(exc.retry_after)
        return response
    # The server refused something we could not name: the request, not us, was wrong.
    return JsonResponse(body, status=400)


def memory_api(*methods: str, off_too: bool = False):
    """JSON endpoint: allowed methods, signed-in user, memory errors mapped to statuses.
    `off_too`: answers while the user's memory is off (the settings that turn it on)."""

    def decorate(view):
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs):
            if request.method not in methods:
                response = JsonResponse(
                    {"error": f"method {request.method} not allowed"}, status=405
                )
                response["Allow"] = ", ".join(methods)
                return response
            if not request.user.is_authenticated:
                return JsonResponse({"error": "authentication required"}, status=401)
            try:
                limits.check_rate(request, "MEMORY_API_RATE")  # first: a refusal costs little
                if not off_too and MemorySettings.turned_off(request.user):
                    raise MemoryOff()
                with limits.one_of_a_few(request.user):
                    return view(request, *args, **kwargs)
            except MemoryServiceError as exc:
                if isinstance(exc, MemoryUnavailable):
                    logger.warning(
                        "memory unavailable for %s: %s (%s)", request.path, exc, exc.detail
                    )
                return error_response(exc)

        return wrapper

    return decorate


def _body(request: HttpRequest) -> dict:
    """The JSON object sent, through the edge's one parser (chat/edge.py)."""
    try:
        return edge.parse_json(request.body, field="body")
    except edge.ChatInputError as exc:
        raise MemoryInputError(exc.field, exc.reason) from None


def _query_int(
    request: HttpRequest, name: str, field: str, default: int, high: int = contract.MAX_RESULTS
) -> int:
    try:
        return edge.int_param(field, request.GET.get(name), default=default, low=1, high=high)
    except edge.ChatInputError as exc:
        raise MemoryInputError(exc.field, exc.reason) from None


def _query_list(request: HttpRequest, name: str) -> list[str] | None:
    """`?kinds=fact&kinds=goal`, `?kinds=fact,goal` or the singular `?kind=fact`."""
    raw = request.GET.getlist(name) + request.GET.getlist(name.removesuffix("s"))
    found = [part.strip() for value in raw for part in value.split(",") if part.strip()]
    return found or None


def _query_filters(request: HttpRequest) -> dict:
    """The filters a GET shares with its POST body: kinds, tags, category."""
    return {
        "kinds": check.kinds("kinds", _query_list(request, "kinds")),
        "tags": check.labels("tags", _query_list(request, "tags")),
        "filter_category": request.GET.get("category") or None,
    }


def _search_args(request: HttpRequest) -> dict:
    """A search's arguments, from the query string (GET) or the JSON body (POST): both
    name the same things and go to the one services.search_memories call."""
    if request.method == "GET":
        return {
            "query": request.GET.get("q", request.GET.get("query")),
            "n_results": _query_int(request, "n", "n_results", 5),
            "mode": request.GET.get("mode") or None,
            **_query_filters(request),
        }
    data = _body(request)
    return {
        "query": data.get("query"),
        "n_results": data.get("n_results", 5),
        "filter_category": data.get("filter_category"),
        "kinds": data.get("kinds"),
        "tags": data.get("tags"),
        "mode": data.get("mode"),
    }


@memory_api("GET", "POST")
def search(request):
    found = services.search_memories(user=request.user, **_search_args(request))
    results = found.get("results") or []
    return JsonResponse(
        {"results": results, "mode_used": found.get("mode_used"), "count": len(results)}
    )


@memory_api("POST")
@idempotent
def add(request):
    data = _body(request)
    result = services.add_thought(
        user=request.user, content=data.get("content"), context=data.get("context")
    )
    return _added(result)


def _added(result: dict) -> JsonResponse:
    status = result.get("status", "created")
    # Saved is saved, indexed or not yet (the server's maintenance writes the vector).
    body = {k: v for k, v in result.items() if k != "indexed"}
    body["message"] = ADD_MESSAGES.get(status, "Memory saved")
    return JsonResponse(body, status=201 if status == "created" else 200)


@memory_api("POST")
def evolution(request):
    data = _body(request)
    result = services.trace_concept_evolution(
        user=request.user, concept=data.get("concept"), limit=data.get("limit", 10)
    )
    return JsonResponse({"timeline": result.get("timeline") or []})


@memory_api("POST")
def consistency(request):
    data = _body(request)
    result = services.check_consistency(user=request.user, statement=data.get("statement"))
    return JsonResponse(result)


@memory_api("GET")
def stats(request):
    return JsonResponse(services.memory_stats(user=request.user))


@memory_api("GET")
def recent(request):
    limit = _query_int(request, "limit", "limit", 10)
    return JsonResponse(services.get_recent_memories(user=request.user, limit=limit))


@memory_api("POST")
@idempotent
def forget(request):
    data = _body(request)
    result = services.forget(
        user=request.user,
        topic=data.get("topic"),
        min_score=data.get("min_score", 0.5),
        dry_run=data.get("dry_run", False),
    )
    removed = result.get("removed") or []
    return JsonResponse(
        {"removed": removed, "count": len(removed), "dry_run": data.get("dry_run", False)}
    )


@memory_api("GET", "DELETE")
@idempotent
def memory_detail(request, memory_id: str):
    if request.method == "GET":
        return JsonResponse(services.get_memory(user=request.user, memory_id=memory_id))
    reason = _body(request).get("reason", "") if request.body else request.GET.get("reason", "")
    services.delete_memory(user=request.user, memory_id=memory_id, reason=reason)
    return JsonResponse({"deleted": True, "id": memory_id})


@memory_api("GET")
def job(request, job_id: int):
    """Where an import or a reset is (the 202's Location): state, done of total, outcome."""
    found = MemoryJob.objects.filter(pk=job_id, user=request.user).first()
    if found is None:
        raise MemoryNotFound("no such job")
    return JsonResponse(jobs.status(found))


# --- settings, the retrieval log, facts -------------------------------------------------


@memory_api("GET", "PATCH", off_too=True)
@idempotent(atomic=True)
def memory_settings(request):
    """The user's memory settings; a PATCH changes the fields it sends
    (memory/client/user_settings.py)."""
    if request.method == "PATCH":
        return JsonResponse(user_settings.change(request.user, _body(request)))
    return JsonResponse(user_settings.as_dict(request.user))


MAX_PAGE = contract.MAX_OFFSET // contract.MAX_RESULTS


def _page(request: HttpRequest) -> tuple[int, int]:
    """(page, limit) from `?page=&limit=`: pages from 1, 20 a page unless asked."""
    return _query_int(request, "page", "page", 1, high=MAX_PAGE), _query_int(
        request, "limit", "limit", 20
    )


def _paged(name: str, items: list, *, page: int, limit: int, total: int) -> JsonResponse:
    more = page * limit < total
    return JsonResponse(
        {name: items, "total": total, "page": page, "limit": limit, "has_more": more}
    )


def retrieval_dict(row: MemoryRetrieval) -> dict:
    return {
        "id": row.pk,
        "conversation_id": row.conversation_id,
        "message_id": row.message_id,
        "query": row.query,
        "memories": row.memories,
        "notes": row.notes,
        "tokens_added": row.tokens_added,
        "latency_ms": row.latency_ms,
        "error": row.error,
        "created_at": row.created_at.isoformat(),
    }


@memory_api("GET")
def retrievals(request):
    """The recall log, newest first, a page at a time."""
    page, limit = _page(request)
    rows = MemoryRetrieval.objects.filter(user=request.user).order_by("-created_at", "-pk")
    start = (page - 1) * limit
    found = [retrieval_dict(row) for row in rows[start : start + limit]]
    return _paged("retrievals", found, page=page, limit=limit, total=rows.count())


# What a fact may say about itself (POST /api/memory/facts): the content and its context.
FACT_FIELDS = ("content", "kind", "category", "tags", "subjects", "ttl", "date", "source")


def _fact_context(data: dict) -> dict:
    for name in data:
        if name not in FACT_FIELDS:
            raise MemoryInputError(
                field_name(name), f"is not a known field (one of {', '.join(FACT_FIELDS)})"
            )
    found = {
        "kind": check.choice("kind", data.get("kind"), contract.KINDS) or "fact",
        "category": check.choice("category", data.get("category"), contract.CATEGORIES),
        "tags": check.labels("tags", data.get("tags")),
        "subjects": check.labels("subjects", data.get("subjects")),
        "ttl": check.ttl("ttl", data.get("ttl")),
        "date": check.iso_date("date", data.get("date")),
        "source": check.text(
            "source", data.get("source"), max_length=contract.MAX_SOURCE, required=False
        ),
    }
    return {name: value for name, value in found.items() if value is not None}


@memory_api("GET", "POST")
@idempotent
def facts(request):
    """GET: every memory of the user's, newest first, a page at a time, filtered by kinds,
    category, tags and text (`q`: the best text matches, at most contract.MAX_RESULTS).
    POST: add one (a `fact` unless another kind is given)."""
    if request.method == "POST":
        data = _body(request)
        context = _fact_context(data)
        return _added(
            services.add_thought(user=request.user, content=data.get("content"), context=context)
        )
    page, limit = _page(request)
    filters = _query_filters(request)
    text = check.text("q", request.GET.get("q"), max_length=contract.MAX_QUERY, required=False)
    if text:
        found = services.search_memories(
            user=request.user,
            query=text,
            n_results=contract.MAX_RESULTS,
            mode="text",
            **filters,
        )
        matches = found.get("results") or []
        start = (page - 1) * limit
        return _paged(
            "facts", matches[start : start + limit], page=page, limit=limit, total=len(matches)
        )
    listed = services.list_memories(
        user=request.user,
        offset=(page - 1) * limit,
        limit=limit,
        kinds=filters["kinds"],
        category=filters["filter_category"],
        tags=filters["tags"],
    )
    return _paged(
        "facts", listed.get("memories") or [], page=page, limit=limit, total=listed.get("total", 0)
    )
