"""The JSON API under /api/: the conversations (chat/api.py) and the memory
(memory/api/views.py), one django-ninja API with one error shape. Its OpenAPI document is
/api/openapi.json, read at /api/docs; both for signed-in users, as the API is.

**Signing in.** Session auth with CSRF, as the pages: log in, then send the `csrftoken`
cookie's value as `X-CSRFToken` with every write. Anonymous: 401; a write without the
token: 403. Every conversation and memory is the signed-in user's: another user's is a 404.

**Errors.** Every error has one shape:
`{"error": {"field": <the input at fault, or null>, "reason": <what was wrong>}}`. A 400
names the field (a dotted path inside the body, "body" for the body as a whole, or a
query parameter), and its reason names it too. The error may also carry `code` (the
memory's word for it: "invalid", "off", "disabled", "unavailable", "too_many"...) and
`limit` (the setting a 429 refers to); a 429 or a 503 carries `retry_after` (seconds)
beside it, and a `Retry-After` header. Over one of the user's fair shares (the web
process's `WEB_USER_RATE`..., the memory's `MEMORY_API_RATE`, `MEMORY_USER_CALLS`) a
request is refused with 429 before anything is sent or stored.

**Retrying a write.** A client that got no answer (a timeout, a reset connection, a
restarted server) cannot tell whether its write happened. Send every write with an
`Idempotency-Key` header (1 to 255 printable ASCII characters, unique per write: a UUID)
and the retry with the same key: the first answer comes back (`Idempotent-Replayed:
true`) and nothing is done twice. The same key with another request: 422; a retry while
the first request still runs: 409 with `Retry-After`. Keys are the user's, kept a day
(`IDEMPOTENCY_KEY_TTL`). A turn answered as Server-Sent Events is not kept: its retry
gets 409 (read the conversation instead). Details: chat/idempotency.py.

**Bodies** go through one JSON parser (chat/edge.py: no NaN or Infinity, no integer past
19 digits, no nesting past 32 levels, no text that cannot be stored) and then their
schema (strict types: "5" is not a 5); limits are the memory contract's
(ikario_rag/contract.py).
"""

import functools

from asgiref.sync import iscoroutinefunction
from django.contrib.auth.decorators import login_required
from django.http import Http404
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser
from ninja.security import SessionAuth

from chat import edge
from chat.api import router as chat_router
from core.errors import problem
from memory.api.views import router as memory_router

# The order the Allow header lists a path's methods in.
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")

# How a schema's refusal reads, in the words the services use for the same refusal.
REASONS = {
    "missing": "is required",
    "string_type": "must be a string",
    "string_unicode": edge.UNSTORABLE,
    "int_type": "must be an integer",
    "float_type": "must be a number",
    "bool_type": "must be true or false",
    "dict_type": "must be a JSON object",
    "list_type": "must be a list",
    "extra_forbidden": "unknown field",
}


class EdgeParser(Parser):
    """Bodies through the edge's parser; its ChatInputError names what was wrong."""

    def parse_body(self, request):
        return edge.parse_json(request.body, field="body")


def input_problem(field: str, reason: str):
    """A 400 for bad input: the field, and a reason that names it."""
    return problem(400, field, f"{field}: {reason}")


def schema_problem(errors: list[dict]):
    """The first of a schema's refusals as a 400: ("body", "payload", "context", "tags")
    is the field "context.tags"."""
    error = errors[0]
    where, *path = error["loc"]
    if where == "body":
        path = path[1:]  # the view's parameter name: not the client's
    field = ".".join(edge.field_name(part) for part in path) or where
    return input_problem(field, REASONS.get(error["type"], error["msg"].lower()))


api = NinjaAPI(
    title="Ikario",
    description=__doc__,
    urls_namespace="api",
    auth=SessionAuth(),
    parser=EdgeParser(),
    docs_decorator=login_required,
)
api.add_router("", chat_router)
api.add_router("memory/", memory_router)


@api.exception_handler(ValidationError)
def _refused_by_schema(request, exc: ValidationError):
    return schema_problem(exc.errors)


@api.exception_handler(edge.ChatInputError)
def _refused_input(request, exc: edge.ChatInputError):
    return input_problem(exc.field, exc.reason)


@api.exception_handler(AuthenticationError)
def _signed_out(request, exc):
    return problem(401, None, "login required")


@api.exception_handler(Http404)
def _not_found(request, exc):
    return problem(404, None, "not found")


@api.exception_handler(HttpError)
def _http_error(request, exc: HttpError):
    # The body's parser failed: ninja wraps what it raised, which names the field.
    if isinstance(exc.__cause__, edge.ChatInputError):
        return _refused_input(request, exc.__cause__)
    return problem(exc.status_code, None, str(exc))


def _allowed_only(view):
    """ninja answers a method a path lacks with an empty 405: the API's one shape instead,
    and its Allow header in one order."""

    def answer(request, response):
        if response.status_code != 405:
            return response
        allowed = {m.strip() for m in response["Allow"].split(",")}
        refused = problem(405, None, f"method {request.method} not allowed")
        refused["Allow"] = ", ".join(m for m in METHODS if m in allowed)
        return refused

    if iscoroutinefunction(view):

        @functools.wraps(view)
        async def async_wrapper(request, *args, **kwargs):
            return answer(request, await view(request, *args, **kwargs))

        return async_wrapper

    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        return answer(request, view(request, *args, **kwargs))

    return wrapper


def urls():
    """The API's URL patterns (ikario_clone/urls.py includes them under /api/)."""
    patterns, app_name, namespace = api.urls
    for pattern in patterns:
        pattern.callback = _allowed_only(pattern.callback)
    return patterns, app_name, namespace
