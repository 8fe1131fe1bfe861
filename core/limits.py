"""Request sizes, bounded before anything reads them (ASGI, in front of Django).

- A URL (path + query string) longer than MAX_URL_BYTES: 414.
- A body larger than the app would ever accept: 413, decided from Content-Length before a
  byte of it is read, and for a body sent without one (chunked) as soon as what arrived
  passes the limit. The limit is Django's DATA_UPLOAD_MAX_MEMORY_SIZE, except for a
  multipart upload (the memory import's file), whose limit is the largest file accepted
  (MEMORY_IMPORT_MAX_BYTES) plus room for the form around it.
- Under /api/ the refusal is JSON, as every API error is (core/errors.py).

Daphne itself receives a whole request before the app sees it, and its HTTP parser drops a
request line past 16 KB: in production the reverse proxy bounds both first (docs/DEPLOY.md,
Production). This is the app's own bound, behind it or without one.
"""

from __future__ import annotations

import json

from django.conf import settings

# nginx's default for a request line (large_client_header_buffers 8k): past it, 414.
MAX_URL_BYTES = 8192
FORM_ROOM = 64 * 1024  # a multipart body's boundaries, headers and small fields


def _header(scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value
    return None


def body_limit(scope) -> int | None:
    """The largest body this request may carry (None: no limit, as Django's None says)."""
    data = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    content_type = (_header(scope, b"content-type") or b"").lower()
    if content_type.startswith(b"multipart/form-data"):
        upload = settings.MEMORY_IMPORT_MAX_BYTES + FORM_ROOM
        return None if data is None else max(data, upload)
    return data


class RequestLimits:
    """ASGI middleware: 414 for an over-long URL, 413 for an over-large body."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        url = len(scope.get("raw_path") or scope["path"].encode()) + len(
            scope.get("query_string", b"")
        )
        if url > MAX_URL_BYTES:
            return await _refuse(scope, send, 414, "URL too long", f"at most {MAX_URL_BYTES} bytes")
        limit = body_limit(scope)
        if limit is None:
            return await self.application(scope, receive, send)
        length = _header(scope, b"content-length")
        if length is not None:
            if not length.isdigit():
                return await _refuse(scope, send, 400, "bad request", "invalid Content-Length")
            if int(length) > limit:
                return await _refuse(scope, send, 413, "body too large", f"at most {limit} bytes")
            return await self.application(scope, receive, send)
        # No Content-Length (chunked): read up to the limit here, then hand it on.
        messages, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            size += len(message.get("body", b""))
            if size > limit:
                return await _refuse(scope, send, 413, "body too large", f"at most {limit} bytes")
            messages.append(message)
            if not message.get("more_body", False):
                break

        async def replay():
            return messages.pop(0) if messages else await receive()

        return await self.application(scope, replay, send)


async def _refuse(scope, send, status: int, reason: str, detail: str) -> None:
    if scope["path"].startswith("/api/"):
        body = json.dumps({"error": {"field": None, "reason": f"{reason}: {detail}"}}).encode()
        content_type = b"application/json"
    else:
        body = f"{reason}: {detail}.\n".encode()
        content_type = b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        # What was not read cannot be skipped to reach a next request on this connection.
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
