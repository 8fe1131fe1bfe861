"""Request bodies bounded inside Daphne, before it buffers them.

Daphne (Twisted underneath) receives a request's whole body before the app sees a byte of
it, and then hands it over all at once: a 500 MB body was read, queued in memory and only
then refused by the app's own limit (core/limits.py), and the process kept the
memory. Daphne has no option for it. So, when Daphne serves the app (asgi.py calls
`install`), its request class is replaced by one that answers 413 as soon as the
Content-Length says the body is past the limit, or as soon as a body sent without one
(chunked) passes it, and closes the connection without reading the rest. The limit is the
app's own (`limits.body_limit`). In production the proxy refuses first (docs/DEPLOY.md, Production:
client_max_body_size / request_body max_size); this holds without one too.
"""

from __future__ import annotations

import json
from io import BytesIO

from daphne import http_protocol

from core.limits import body_limit


def _refusal(path: bytes, limit: int) -> bytes:
    detail = f"body too large: at most {limit} bytes"
    if path.startswith(b"/api/"):
        body = json.dumps({"error": {"field": None, "reason": detail}}).encode()
        content_type = b"application/json"
    else:
        body, content_type = f"{detail}.\n".encode(), b"text/plain; charset=utf-8"
    return (
        b"HTTP/1.1 413 Content Too Large\r\nContent-Type: " + content_type + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n" + body
    )


class BoundedRequest(http_protocol.WebRequest):
    """Daphne's request, refusing a body past the app's limit before holding it."""

    refused = False
    limit: int | None = None
    received = 0

    def gotLength(self, length):
        content_type = self.requestHeaders.getRawHeaders(b"content-type", [b""])[0]
        self.limit = body_limit({"headers": [(b"content-type", content_type)]})
        if self.limit is not None and length is not None and length > self.limit:
            return self._refuse()
        super().gotLength(length)

    def handleContentChunk(self, data):
        if self.refused:
            return
        self.received += len(data)
        if self.limit is not None and self.received > self.limit:
            return self._refuse()
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if not self.refused:
            super().requestReceived(command, path, version)

    def _refuse(self) -> None:
        self.refused = True
        self.content = BytesIO()  # what Daphne would read if anything still asked
        # Not "100 Continue" after the answer: the client is told to send nothing.
        self.requestHeaders.removeHeader(b"expect")
        channel = self.channel
        channel.transport.write(_refusal(getattr(channel, "_path", b"/"), self.limit))
        channel.transport.loseConnection()


def install() -> None:
    """Daphne builds every HTTP request of this process with BoundedRequest from now on."""
    http_protocol.WebRequest = BoundedRequest
