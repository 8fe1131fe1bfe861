"""Request sizes are bounded before anything reads them (issue 24): 414 for a URL past
8 KB, 413 for a body past the limit (JSON under /api/), decided from Content-Length without
reading the body, or as a body without one arrives.

Against Daphne serving the app, and the middleware alone for what Daphne cannot show.
"""

from __future__ import annotations

import json
import socket

import httpx
import pytest

from core.limits import MAX_URL_BYTES, RequestLimits
from tests.deploy.test_websocket_origin import login_cookie

MB = 1024 * 1024


@pytest.fixture(scope="module")
def api(app_server):
    cookie = login_cookie(app_server, "limits-user")
    headers = {"Cookie": cookie, "X-CSRFToken": cookie.split("csrftoken=")[1]}
    with httpx.Client(base_url=app_server.url, headers=headers, timeout=60) as client:
        yield client


def test_an_oversized_json_body_under_api_answers_json_413(api):
    body = json.dumps({"title": "x" * (3 * MB)})

    for url in ("/api/conversations", "/api/memory/add"):
        response = api.post(url, content=body, headers={"Content-Type": "application/json"})

        assert response.status_code == 413, (url, response.text[:200])
        assert response.headers["content-type"] == "application/json"
        assert response.json()["error"]["reason"].startswith("body too large")


def test_an_oversized_body_without_a_length_is_refused_as_it_arrives(api):
    def chunks():
        for _ in range(6):
            yield b"x" * (512 * 1024)

    response = api.post(
        "/api/conversations", content=chunks(), headers={"Content-Type": "application/json"}
    )

    assert response.status_code == 413
    assert response.json()["error"]["reason"].startswith("body too large")


def test_a_body_within_the_limit_is_served(api):
    response = api.post("/api/conversations", json={"title": "Within the limit"})

    assert response.status_code == 201, response.text


@pytest.mark.parametrize("path", ["/api/conversations", "/"])
def test_an_overlong_query_string_answers_414(api, path):
    response = api.get(path, params={"q": "x" * 10_000})

    assert response.status_code == 414
    if path.startswith("/api/"):
        assert response.json()["error"]["reason"].startswith("URL too long")


# --- Daphne itself: refused before it holds the body (ikario_clone/daphne_limits.py) ------

ANSWER_WAIT = 60.0  # seconds: bound on the answer on a busy machine


def _answer_to(app_server, sent: bytes) -> bytes:
    """What Daphne answers to `sent`, a request whose body stops short of its end: before
    the bound it waited for the rest (here, until the deadline)."""
    with socket.create_connection(("127.0.0.1", app_server.port), timeout=ANSWER_WAIT) as raw:
        raw.sendall(sent)
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    return answer


def test_daphne_refuses_a_500_mb_body_from_its_length_without_reading_it(app_server):
    head = (
        b"POST /api/conversations HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/json\r\nContent-Length: 524288000\r\n\r\n"
    )

    answer = _answer_to(app_server, head + b'{"title": "' + b"x" * 1000)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert json.loads(answer.split(b"\r\n\r\n", 1)[1])["error"]["reason"].startswith(
        "body too large"
    )


def test_daphne_refuses_a_chunked_body_once_past_the_limit(app_server, settings):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    head = (
        b"POST /c/new/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    # One byte past the limit, and the body's end never sent.
    chunk = f"{limit + 1:x}\r\n".encode() + b"x" * (limit + 1)

    answer = _answer_to(app_server, head + chunk)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert answer.endswith(f"body too large: at most {limit} bytes.\n".encode())


# --- the middleware alone ----------------------------------------------------------------


async def run(scope: dict, body_messages=()):
    """RequestLimits in front of an app that records whether it ran; what was sent back."""
    sent, reached, pending = [], [], list(body_messages)

    async def app(scope, receive, send):
        reached.append(await receive())
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    async def receive():
        if not pending:
            raise AssertionError("the body was read")
        return pending.pop(0)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "query_string": b"", **scope}
    await RequestLimits(app)(scope, receive, send)
    return sent[0]["status"], reached


async def test_a_500_mb_body_is_refused_before_a_byte_is_read():
    scope = {"path": "/api/memory/add", "headers": [(b"content-length", b"524288000")]}

    status, reached = await run(scope)  # receive() raises if called

    assert status == 413 and reached == []


async def test_a_multipart_upload_may_carry_the_largest_import_file(settings):
    settings.MEMORY_IMPORT_MAX_BYTES = 5 * MB
    length = str(4 * MB).encode()
    multipart = [(b"content-type", b"multipart/form-data; boundary=x"), (b"content-length", length)]
    json_body = [(b"content-type", b"application/json"), (b"content-length", length)]
    body = [{"type": "http.request", "body": b"", "more_body": False}]

    assert (await run({"path": "/memory/import", "headers": multipart}, body))[0] == 200
    assert (await run({"path": "/api/conversations", "headers": json_body}, body))[0] == 413


async def test_a_url_at_the_limit_is_served():
    scope = {"path": "/", "query_string": b"q=" + b"x" * (MAX_URL_BYTES - 3), "headers": []}
    body = [{"type": "http.request", "body": b"", "more_body": False}]

    assert (await run(scope, body))[0] == 200
