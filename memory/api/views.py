"""The memory's JSON API under /api/memory/ (a router of the one API, ikario_clone/api.py):
search, add, evolution, consistency, stats, recent, get, delete and forget; settings, the
retrieval log and facts; where an import or a reset is.

Errors are the API's one shape (core/errors.py): 400 names the field, 401 for anonymous
callers, 404 for another user's or an unknown memory, 409 with code "off" when the user
turned memory off (every endpoint but the settings), 429 (with Retry-After, "limit" naming
the setting) over the user's fair share (memory/client/limits.py), 503 (with Retry-After)
when the memory server is down or memory is disabled on the server. Nothing a client sends
gives a 500, and no error says more than "memory unavailable" (with the server's one-line
reason): details go to the log. Every write takes an `Idempotency-Key` header
(chat/idempotency.py): a retry changes nothing.
"""

# No `from __future__ import annotations`: ninja reads the views' annotations through their
# decorators, where string annotations would not resolve.
import functools
import logging

from django.http import HttpRequest, JsonResponse
from ninja import Router

from chat import edge
from chat.idempotency import idempotent
from core.errors import problem
from ikario_rag import contract
from memory.api.schemas import (
    AddBody,
    ConsistencyBody,
    DeleteBody,
    EvolutionBody,
    FactBody,
    ForgetBody,
    SearchBody,
    SettingsChange,
)
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
router = Router(tags=["memory"])

ADD_MESSAGES = {
    "created": "Memory saved",
    "updated": "Memory updated",
    "duplicate": "Already in memory",
}


def error_response(exc: MemoryServiceError) -> JsonResponse:
    """The answer (and status) a memory error becomes; `code` is the error's word."""
    if isinstance(exc, MemoryInputError):
        return problem(400, exc.field, exc.message, code=exc.status)
    status = 400  # the server refused something we could not name: the request was wrong
    more: dict = {"code": exc.status}
    if isinstance(exc, MemoryNotFound):
        status = 404
    elif isinstance(exc, MemoryOff):
        status = 409
    elif isinstance(exc, MemoryDisabled):
        status = 503
    elif isinstance(exc, MemoryBusy):
        status, more["limit"], more["retry_after"] = 429, exc.limit, exc.retry_after
    elif isinstance(exc, MemoryUnavailable):
        status, more["retry_after"] = 503, exc.retry_after
    return problem(status, None, exc.message, **more)


def memory_api(view=None, *, off_too: bool = False):
    """A memory endpoint: the user's fair share, memory on, memory errors mapped to
    statuses. `off_too`: answers while the user's memory is off (the settings that turn
    it on)."""
    if view is None:
        return functools.partial(memory_api, off_too=off_too)

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args, **kwargs):
        try:
            limits.check_rate(request, "MEMORY_API_RATE")  # first: a refusal costs little
            if not off_too and MemorySettings.turned_off(request.user):
                raise MemoryOff()
            with limits.one_of_a_few(request.user):
                return view(request, *args, **kwargs)
        except MemoryServiceError as exc:
            if isinstance(exc, MemoryUnavailable):
                logger.warning("memory unavailable for %s: %s (%s)", request.path, exc, exc.detail)
            return error_response(exc)

    return wrapper


# The views declare their query parameters as text, for the OpenAPI document, and read
# them here: a count is digits only (edge.int_param), named as the body names it.
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


def _found(request: HttpRequest, **arguments) -> JsonResponse:
    found = services.search_memories(user=request.user, **arguments)
    results = found.get("results") or []
    return JsonResponse(
        {"results": results, "mode_used": found.get("mode_used"), "count": len(results)}
    )


@router.get("search")
@memory_api
def search(
    request,
    q: str | None = None,
    query: str | None = None,
    n: str | None = None,
    mode: str | None = None,
    category: str | None = None,
):
    """Search: the best matches of `q` (or `query`), `n` of them (1-100, default 5);
    `mode` hybrid, semantic or text; filtered by `kinds` and `tags` (repeated,
    `?kinds=fact&kinds=goal`, or comma-separated; `kind`/`tag` are the same) and
    `category`: {"results": [memory + relevance_score], "mode_used", "count"}."""
    return _found(
        request,
        query=q if q is not None else query,
        n_results=_query_int(request, "n", "n_results", 5),
        mode=mode or None,
        **_query_filters(request),
    )


@router.post("search")
@memory_api
def search_posted(request, payload: SearchBody):
    """The search of GET /search, its arguments in the body."""
    return _found(request, **payload.model_dump())


@router.post("add")
@memory_api
@idempotent
def add(request, payload: AddBody):
    """Save a memory: 201 {"id", "status": "created", "message"}, 200 when it `updated`
    one or was a `duplicate`. `context`: category, kind, tags, concepts, emotions,
    subjects, date, source, ttl, dedup (docs/MEMORY_TOOLS.md)."""
    result = services.add_thought(
        user=request.user, content=payload.content, context=payload.context
    )
    return _added(result)


def _added(result: dict) -> JsonResponse:
    status = result.get("status", "created")
    # Saved is saved, indexed or not yet (the server's maintenance writes the vector).
    body = {k: v for k, v in result.items() if k != "indexed"}
    body["message"] = ADD_MESSAGES.get(status, "Memory saved")
    return JsonResponse(body, status=201 if status == "created" else 200)


@router.post("evolution")
@memory_api
def evolution(request, payload: EvolutionBody):
    """How a concept changed over time: {"timeline": [{id, date, content, evolution}]}."""
    result = services.trace_concept_evolution(
        user=request.user, concept=payload.concept, limit=payload.limit
    )
    return JsonResponse({"timeline": result.get("timeline") or []})


@router.post("consistency")
@memory_api
def consistency(request, payload: ConsistencyBody):
    """Whether a statement agrees with the memories: {"verdict", "consistency_score",
    "contradictions", "supporting", "undetermined", "judged_by"} (a model judges the
    rules' pairs when a key is set: docs/MEMORY_TOOLS.md)."""
    result = services.check_consistency(user=request.user, statement=payload.statement)
    return JsonResponse(result)


@router.get("stats")
@memory_api
def stats(request):
    """{"connected", "status", "total_memories", "last_save", "by_category", "by_kind",
    "error"}: answered (200) even when the memory server is down."""
    return JsonResponse(services.memory_stats(user=request.user))


@router.get("recent")
@memory_api
def recent(request, limit: str | None = None):
    """The newest memories, `limit` of them (10)."""
    limit = _query_int(request, "limit", "limit", 10)
    return JsonResponse(services.get_recent_memories(user=request.user, limit=limit))


@router.post("forget")
@memory_api
@idempotent
def forget(request, payload: ForgetBody):
    """Delete the memories about `topic` scoring at least `min_score` (0-1, default 0.5);
    `dry_run` lists them only: {"removed": [{id, content}], "count", "dry_run"}."""
    result = services.forget(
        user=request.user,
        topic=payload.topic,
        min_score=payload.min_score,
        dry_run=payload.dry_run,
    )
    removed = result.get("removed") or []
    return JsonResponse({"removed": removed, "count": len(removed), "dry_run": payload.dry_run})


@router.get("jobs/{int:job_id}", url_name="memory-job")
@memory_api
def job(request, job_id: int):
    """Where an import or a reset is (the 202's Location of the memory page's
    `POST /memory/import` and `/memory/reset`): {"id", "kind": "import" or "reset", "state":
    "queued", "running", "done" or "failed", "done", "total", "outcome", "error"}."""
    found = MemoryJob.objects.filter(pk=job_id, user=request.user).first()
    if found is None:
        raise MemoryNotFound("no such job")
    return JsonResponse(jobs.status(found))


# --- settings, the retrieval log, facts -------------------------------------------------


@router.get("settings")
@memory_api(off_too=True)
def memory_settings(request):
    """The user's memory settings: {"enabled", "paused", "auto_recall", "autosave",
    "max_results", "min_score", "reference_past_chats"}. Answered while memory is off,
    as their PATCH is (every other endpoint then answers 409)."""
    return JsonResponse(user_settings.as_dict(request.user))


# The settings check the body themselves, naming any field that is not one of theirs
# (even one whose name cannot be stored); the schema documents it.
SETTINGS_BODY = {
    "requestBody": {
        "content": {"application/json": {"schema": SettingsChange.model_json_schema()}},
        "required": True,
    }
}


@router.patch("settings", openapi_extra=SETTINGS_BODY)
@memory_api(off_too=True)
@idempotent(atomic=True)
def memory_settings_change(request):
    """Change the settings the body names, the same code as the memory page's sliders
    (memory/client/user_settings.py): `enabled`, `paused`, `auto_recall`, `autosave`,
    `reference_past_chats` true or false, `max_results` 1-10 (memories recalled before
    each reply), `min_score` 0-1 (the relevance each needs). Every field is checked
    before any is saved: one bad or unknown field (400 naming it) changes nothing.
    Answers the settings as they now are."""
    try:
        changes = edge.parse_json(request.body, field="body")
    except edge.ChatInputError as exc:
        raise MemoryInputError(exc.field, exc.reason) from None
    return JsonResponse(user_settings.change(request.user, changes))


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


@router.get("retrievals")
@memory_api
def retrievals(request, page: str | None = None, limit: str | None = None):
    """The recall log, newest first, a page at a time (`page` from 1, `limit` 1-100,
    default 20): {"retrievals": [{"id", "conversation_id", "message_id", "query",
    "memories": [{id, score}], "tokens_added", "latency_ms", "error", "created_at"}],
    "total", "page", "limit", "has_more"}."""
    page, limit = _page(request)
    rows = MemoryRetrieval.objects.filter(user=request.user).order_by("-created_at", "-pk")
    start = (page - 1) * limit
    found = [retrieval_dict(row) for row in rows[start : start + limit]]
    return _paged("retrievals", found, page=page, limit=limit, total=rows.count())


def _fact_context(data: dict) -> dict:
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


@router.post("facts")
@memory_api
@idempotent
def fact_add(request, payload: FactBody):
    """Add a memory, of kind `fact` unless another is given (near-duplicate facts replace
    each other: docs/MEMORY_TOOLS.md); answered as /add. `ttl`: a whole number, 1 to 5
    digits, of minutes, hours, days or weeks (`30m`, `3h`, `1d`, `2w`), after which the
    memory is forgotten (the server's rule, ikario_rag.contract.ttl_seconds)."""
    data = payload.model_dump()
    context = _fact_context(data)
    return _added(services.add_thought(user=request.user, content=payload.content, context=context))


@router.get("facts")
@memory_api
def facts(
    request,
    q: str | None = None,
    page: str | None = None,
    limit: str | None = None,
    category: str | None = None,
):
    """Every memory of the user's, newest first, a page at a time, filtered by `kinds`,
    `category`, `tags` (any of them) and text (`q`: the memories containing its words,
    best first, at most 100): {"facts": [memory], "total", "page", "limit", "has_more"}."""
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


def _memory(request, memory_id: str) -> JsonResponse:
    return JsonResponse(services.get_memory(user=request.user, memory_id=memory_id))


def _delete(request, memory_id: str, payload: DeleteBody | None) -> JsonResponse:
    reason = payload.reason if payload is not None else request.GET.get("reason", "")
    services.delete_memory(user=request.user, memory_id=memory_id, reason=reason)
    return JsonResponse({"deleted": True, "id": memory_id})


@router.get("facts/{memory_id}")
@memory_api
def fact(request, memory_id: str):
    return _memory(request, memory_id)


@router.delete("facts/{memory_id}")
@memory_api
@idempotent
def fact_delete(request, memory_id: str, payload: DeleteBody | None = None):
    """Delete a memory; the `reason` (body or query string) is kept in the log."""
    return _delete(request, memory_id, payload)


# Last: any other single segment is a memory id.
@router.get("{memory_id}")
@memory_api
def memory_detail(request, memory_id: str):
    return _memory(request, memory_id)


@router.delete("{memory_id}")
@memory_api
@idempotent
def memory_delete(request, memory_id: str, payload: DeleteBody | None = None):
    """Delete a memory; the `reason` (body or query string) is kept in the log."""
    return _delete(request, memory_id, payload)
