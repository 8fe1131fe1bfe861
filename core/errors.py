"""The app's 400, 404, 500 and 503 answers: its own pages, and JSON under /api/ (clients
parse it).

Every error of the JSON API has one shape, `problem()`'s:
{"error": {"field": <the input at fault, or null>, "reason": <what was wrong>, ...}}, the
error object carrying `code` (a word a client may branch on) or `limit` (the setting
refused) where there is one, and `retry_after` (seconds) beside it on a 429 or a 503.

A database that cannot be reached (stopped, restarting, a network blip, SQLite locked past
its timeout) is not a bug of the request: it gets a 503 with Retry-After, pages and APIs
alike, and one line in the log instead of a traceback per request (`OutageFilter`).
WebSockets likewise (`SocketOutage`): refused, or closed with 4503.
"""

import logging
import sys

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import HttpResponse, JsonResponse
from django.template import loader
from django.views import defaults

# Seconds a client is told to wait before trying again while the database is away.
RETRY_AFTER_SECONDS = 5
DATABASE_AWAY = "database unavailable, retry later"
# The WebSocket close code of a database outage: 4000 + the HTTP status, as the consumers'
# 4401 and 4404. RFC 6455's own "try again later", 1013, is not one a server may send
# through Daphne (its WebSocket library allows 1000 and 3000-4999 only).
SOCKET_DATABASE_AWAY = 4503

logger = logging.getLogger(__name__)


def problem(status: int, field: str | None, reason: str, **more) -> JsonResponse:
    """The API's one error answer (see above); `more` goes into the error object, but
    `retry_after`, which goes beside it and into the Retry-After header."""
    retry_after = more.pop("retry_after", None)
    body: dict = {"error": {"field": field, "reason": reason, **more}}
    if retry_after is not None:
        body["retry_after"] = retry_after
    response = JsonResponse(body, status=status)
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def bad_request(request, exception):
    # A body past DATA_UPLOAD_MAX_MEMORY_SIZE (multipart fields) is what HTTP calls 413.
    too_big = isinstance(exception, RequestDataTooBig)
    if _is_api(request):
        reason = "body too large" if too_big else "bad request"
        return problem(413 if too_big else 400, None, reason)
    response = defaults.bad_request(request, exception)
    if too_big:
        response.status_code = 413
    return response


def page_not_found(request, exception):
    if _is_api(request):
        return problem(404, None, "not found")
    return defaults.page_not_found(request, exception)


def database_away(exception: BaseException | None) -> bool:
    """True for the errors of a database that cannot be reached, not of a bad query."""
    return isinstance(exception, (OperationalError, InterfaceError))


def server_error(request):
    # Django calls this inside its `except`: the exception being handled is at hand.
    if database_away(sys.exc_info()[1]):
        return service_unavailable(request)
    if _is_api(request):
        return problem(500, None, "server error")
    return defaults.server_error(request)


def service_unavailable(request):
    if _is_api(request):
        response = problem(503, None, DATABASE_AWAY)
    else:
        # A plain template: the base template would read the session and the user, which
        # live in the database that is away.
        response = HttpResponse(loader.render_to_string("503.html"), status=503)
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class OutageFilter(logging.Filter):
    """On django.request: a request failed by a database outage is logged as one line (the
    cause), not a traceback; each request of an outage would otherwise log one."""

    def filter(self, record: logging.LogRecord) -> bool:
        exception = record.exc_info[1] if record.exc_info else None
        if database_away(exception):
            said = record.getMessage()
            record.msg = "%s (%s: %s)"
            record.args = (said, type(exception).__name__, exception)
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class SuspiciousLine(logging.Filter):
    """On the console handler: Django's django.security.* records (a POST with too many
    fields, a body too large, a bad Host: what a client sent, answered 400) as one line
    naming the path, not a traceback; anyone can send them, anonymously too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("django.security.") and record.exc_info:
            request = getattr(record, "request", None)
            said = record.getMessage()
            record.msg = "%s (%s %s, answered 400)"
            record.args = (said, getattr(request, "method", "?"), getattr(request, "path", "?"))
            record.exc_info = None
            record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


class SocketOutage:
    """Around the app's WebSockets: a database that cannot be reached, while Channels'
    AuthMiddleware reads the session or while a consumer works, logs one line, not a
    traceback, and ends the socket cleanly:

    - a handshake not yet answered is refused (Daphne says 403, where it said 500): the
      browser sees an abnormal close, 1006, and the page's htmx ws extension tries again
      with a growing pause. Accepting it to close it with a code would flush the page's
      queued message into a socket about to close (lost), and reset that pause each time;
    - an open socket is closed with 4503: static/chat/chat.js opens it again.
    """

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        said = set()  # the types of the messages the app sent: accept, send, close

        async def sending(message):
            said.add(message["type"])
            await send(message)

        try:
            return await self.application(scope, receive, sending)
        except Exception as exc:
            if not database_away(exc):
                raise
            logger.warning(
                "WebSocket %s ended, %s (%s: %s)",
                scope["path"],
                DATABASE_AWAY,
                type(exc).__name__,
                exc,
            )
        if "websocket.close" not in said:
            await send({"type": "websocket.close", "code": SOCKET_DATABASE_AWAY})
