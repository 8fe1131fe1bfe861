"""Which pages may open the app's WebSockets (issue 24): the app's own origin only, scheme,
host and port compared, or one of CSRF_TRUSTED_ORIGINS.

Against Daphne serving the app (a real handshake), and the validator alone for the
settings it reads.
"""

from __future__ import annotations

import re

import httpx
import pytest
from channels.testing import WebsocketCommunicator
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from core.origins import SameOriginValidator
from tests.fixtures.users import PASSWORD


def login_cookie(app_server, username: str) -> str:
    """A session of a new user of `app_server` and its CSRF cookie, as a Cookie header."""
    app_server.create_user(username, PASSWORD)
    with httpx.Client(base_url=app_server.url, timeout=30) as client:
        page = client.get("/accounts/login/").text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        response = client.post(
            "/accounts/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        )
        assert response.status_code == 302, response.text
        return f"sessionid={client.cookies['sessionid']}; csrftoken={client.cookies['csrftoken']}"


@pytest.fixture(scope="module")
def session_cookie(app_server):
    return login_cookie(app_server, "origin-user")


def handshake(app_server, cookie, origin) -> int:
    """The HTTP status the app answers a WebSocket handshake from a page of `origin`."""
    headers = {"Cookie": cookie, "Origin": origin}
    url = f"ws://127.0.0.1:{app_server.port}/ws/events/"
    try:
        with connect(url, additional_headers=headers, origin=None, open_timeout=30):
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


def test_the_apps_own_page_opens_its_socket(app_server, session_cookie):
    assert handshake(app_server, session_cookie, app_server.url) == 101


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:{other}",  # another port of the same host (any other local app)
        "https://127.0.0.1:{port}",  # another scheme
        "http://localhost:{port}",  # another allowed host than the one connected to
        "null",
    ],
)
def test_a_page_of_another_origin_cannot_open_it(app_server, session_cookie, origin):
    origin = origin.format(port=app_server.port, other=app_server.port + 1)
    assert handshake(app_server, session_cookie, origin) == 403


# --- the validator alone -----------------------------------------------------------------


async def accepting(scope, receive, send):
    """A socket app that accepts whatever reaches it (and touches no database)."""
    while True:
        message = await receive()
        if message["type"] == "websocket.connect":
            await send({"type": "websocket.accept"})
        elif message["type"] == "websocket.disconnect":
            return


async def opens(headers: dict[str, str], **scope) -> bool:
    communicator = WebsocketCommunicator(
        SameOriginValidator(accepting),
        "/ws/events/",
        headers=[(k.lower().encode(), v.encode()) for k, v in headers.items()],
    )
    communicator.scope.update(scope)
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    return connected


# A refusal goes through Channels' WebsocketDenier, a consumer that closes old database
# connections: with one left open by an earlier test, that is database access.
@pytest.mark.django_db
async def test_it_trusts_the_csrf_trusted_origins(settings):
    settings.ALLOWED_HOSTS = ["ikario.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = ["https://ikario.example.com", "https://*.example.org"]
    host = {"Host": "ikario.example.com"}

    assert await opens({**host, "Origin": "https://ikario.example.com"})
    assert await opens({**host, "Origin": "https://chat.example.org"})
    assert not await opens({**host, "Origin": "https://ikario.example.com:8443"})
    assert not await opens({**host, "Origin": "http://evil.example.net"})


@pytest.mark.django_db
async def test_it_reads_the_scheme_from_the_proxy_header_django_trusts(settings):
    settings.ALLOWED_HOSTS = ["ikario.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = []
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    page = {"Host": "ikario.example.com", "Origin": "https://ikario.example.com"}

    assert await opens({**page, "X-Forwarded-Proto": "https"})
    assert not await opens(page)  # plain ws: the https page is another origin
    assert await opens(page, scheme="wss")


@pytest.mark.django_db
async def test_it_refuses_a_host_it_does_not_serve_and_a_missing_origin(settings):
    settings.ALLOWED_HOSTS = ["ikario.example.com"]
    settings.CSRF_TRUSTED_ORIGINS = []

    assert not await opens({"Host": "evil.example.net", "Origin": "http://evil.example.net"})
    assert not await opens({"Host": "ikario.example.com"})
