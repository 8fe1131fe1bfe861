"""A database that cannot be reached: a clear 503 with Retry-After, pages and APIs, one log
line per request and no traceback; the app answers again as soon as the database is back.

The outage is real: the production app (Daphne, DEBUG off) on a SQLite file whose folder is
moved away while the app runs, so every new connection fails in the driver itself.
"""

from __future__ import annotations

import json
import time

import pytest
from channels.testing import WebsocketCommunicator
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.sync.client import connect

from core.errors import SocketOutage
from tests.deploy.conftest import ProductionServer

PASSWORD = "outage-pass-4242"


@pytest.fixture
def server():
    app = ProductionServer()
    data = app.dir / "data"
    data.mkdir()
    app.env["DATABASE_URL"] = f"sqlite:///{data / 'db.sqlite3'}"
    app.env["CHAT_INCOGNITO_GRACE"] = "0"  # an incognito chat whose page is left goes at once
    app.start()
    app.create_user("outage-user", PASSWORD)
    yield app
    app.stop()


def logged_in(app: ProductionServer):
    client = app.https()
    origin = f"https://127.0.0.1:{app.port}"
    token = client.get("/accounts/login/").cookies["csrftoken"]
    client.cookies.clear()  # Secure cookies: the test talks plain HTTP and sends them by hand
    response = client.post(
        "/accounts/login/",
        data={"username": "outage-user", "password": PASSWORD, "csrfmiddlewaretoken": token},
        headers={"Cookie": f"csrftoken={token}", "Origin": origin, "Referer": origin + "/"},
    )
    assert response.status_code == 302, response.text
    client.headers["Cookie"] = f"sessionid={response.cookies['sessionid']}"
    return client


def test_a_database_outage_is_a_503_with_retry_after_then_the_app_comes_back(server):
    client = logged_in(server)
    assert client.get("/").status_code == 200
    assert client.get("/api/conversations").status_code == 200

    data = server.dir / "data"
    data.rename(server.dir / "data.away")
    try:
        page = client.get("/")
        api = client.get("/api/conversations")
    finally:
        (server.dir / "data.away").rename(data)

    assert page.status_code == 503 and page.headers["retry-after"] == "5", page.text
    assert "cannot reach its database" in page.text and "Traceback" not in page.text
    assert api.status_code == 503 and api.headers["retry-after"] == "5"
    assert api.json() == {"error": {"field": None, "reason": "database unavailable, retry later"}}

    log = server.log.read_text()
    assert "OperationalError" in log  # the cause, said once per request
    assert "Traceback" not in log

    assert client.get("/").status_code == 200
    assert client.get("/api/conversations").status_code == 200
    client.close()


# --- the WebSockets ----------------------------------------------------------------------


def a_conversation(app: ProductionServer, incognito: bool = False) -> int:
    code = (
        "from django.contrib.auth.models import User; from chat.models import Conversation; "
        "user = User.objects.get(username='outage-user'); "
        f"print(Conversation.objects.create(user=user, incognito={incognito}).pk)"
    )
    return int(app.manage("shell", "-c", code).split()[-1])


def socket(app: ProductionServer, client, path: str):
    """A WebSocket opened on `path` as the signed-in page would (behind the TLS proxy)."""
    headers = {
        "Cookie": client.headers["Cookie"],
        "Origin": f"https://127.0.0.1:{app.port}",
        "X-Forwarded-Proto": "https",
    }
    url = f"ws://127.0.0.1:{app.port}{path}"
    return connect(url, additional_headers=headers, origin=None, open_timeout=30)


def eventually(check, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def handshake(app: ProductionServer, client, path: str) -> str:
    """How the app answers a socket opened on `path`: "refused <HTTP status>", "closed
    <close code>", or "open" (it answers a frame)."""
    try:
        with socket(app, client, path) as ws:
            ws.send(json.dumps({"action": "unknown"}))
            try:
                ws.recv(timeout=30)
            except ConnectionClosed as exc:
                return f"closed {exc.rcvd.code if exc.rcvd else None}"
            return "open"
    except InvalidStatus as exc:
        return f"refused {exc.response.status_code}"


def test_a_database_outage_refuses_a_socket_then_it_connects(server):
    client = logged_in(server)
    chat = f"/ws/conversations/{a_conversation(server)}/"
    assert handshake(server, client, chat) == "open"

    data = server.dir / "data"
    data.rename(server.dir / "data.away")
    try:
        answers = {path: handshake(server, client, path) for path in (chat, "/ws/events/")}
    finally:
        (server.dir / "data.away").rename(data)

    # The session could not be read: refused, which the page's htmx ws extension sees as an
    # abnormal close (1006) and tries again after a growing pause.
    assert answers == {chat: "refused 403", "/ws/events/": "refused 403"}
    log = server.log.read_text()
    assert "WebSocket /ws/events/ ended, database unavailable, retry later (OperationalError" in log
    assert "Traceback" not in log

    assert handshake(server, client, chat) == "open"
    client.close()


def test_a_database_outage_closes_an_open_socket_with_4503(server):
    client = logged_in(server)
    incognito = a_conversation(server, incognito=True)
    chat = f"/ws/conversations/{incognito}/"
    with socket(server, client, chat) as ws:
        data = server.dir / "data"
        data.rename(server.dir / "data.away")
        try:
            ws.send(json.dumps({"content": "Are you there?"}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
        finally:
            (server.dir / "data.away").rename(data)

    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4503
    log = server.log.read_text()
    assert f"WebSocket {chat} ended, database unavailable" in log and "OperationalError" in log
    assert "Traceback" not in log

    # The socket no longer holds its incognito chat open: left by its last page (this one,
    # opened again if the chat could not be deleted during the outage), the chat goes.
    def there() -> bool:
        code = "from chat.models import Conversation as C; "
        code += f"print(C.objects.filter(pk={incognito}).exists())"
        return server.manage("shell", "-c", code).split()[-1] == "True"

    if there():
        assert handshake(server, client, chat) == "open"
    assert eventually(lambda: not there())
    assert "Traceback" not in server.log.read_text()
    client.close()


# --- the socket middleware alone --------------------------------------------------------


async def test_an_error_that_is_not_an_outage_is_not_disguised_as_one():
    async def broken(scope, receive, send):
        raise ValueError("a bug")

    communicator = WebsocketCommunicator(SocketOutage(broken), "/ws/events/")
    with pytest.raises(ValueError, match="a bug"):
        await communicator.connect()
