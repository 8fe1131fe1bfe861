"""Fair shares through Daphne (ikario_clone/fair_shares.py): a user over her share is refused
on every way in (a page, an htmx partial, a chat turn, the socket) before Django, another
user is served, and an address with no session is limited too.

The app runs as `make run` runs it (Daphne in a subprocess, tests/fixtures/browser.py),
with shares small enough to spend in a few requests and refilled at 1 an hour, so what a
request gets depends on the count alone.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
import websockets

from tests.fixtures.browser import AppServer

BURST = 8  # each user's share (a session's first request, its look-up, is the address's)


@pytest.fixture(scope="module")
def served(fake_anthropic_server):
    server = AppServer(
        {
            "ANTHROPIC_BASE_URL": fake_anthropic_server.base_url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-key-for-tests",
            "ANTHROPIC_MAX_RETRIES": "0",
            "WEB_LIMITS_ENABLED": "true",  # off for the other tests' app (browser.py)
            "WEB_USER_RATE": "1/h",
            "WEB_USER_BURST": str(BURST),
            "WEB_ADDRESS_RATE": "1/h",
            # The readiness probe, one look-up per session below, and the flood's 4.
            "WEB_ADDRESS_BURST": "9",
            "WEB_USER_AT_ONCE": "1",
        }
    ).start()
    try:
        yield server, {name: _signed_in(server, name) for name in ("alice", "bob", "carol", "dan")}
    finally:
        server.stop()


def _signed_in(server: AppServer, name: str) -> dict:
    """A user with a session and a conversation, made in the database (no request spent)."""
    code = (
        "from django.contrib.auth import get_user_model, SESSION_KEY, BACKEND_SESSION_KEY, "
        "HASH_SESSION_KEY; from django.contrib.sessions.backends.db import SessionStore; "
        "from chat.models import Conversation; "
        f"u = get_user_model().objects.create_user({name!r}, password='pw-not-used-1'); "
        "s = SessionStore(); s[SESSION_KEY] = str(u.pk); "
        "s[BACKEND_SESSION_KEY] = 'django.contrib.auth.backends.ModelBackend'; "
        "s[HASH_SESSION_KEY] = u.get_session_auth_hash(); s.create(); "
        "print(s.session_key, Conversation.objects.create(user=u).pk)"
    )
    session, conversation = server.manage("shell", "-c", code).split()[-2:]
    client = httpx.Client(base_url=server.url, cookies={"sessionid": session}, timeout=30)
    return {"client": client, "session": session, "conversation": int(conversation)}


def _spend(client: httpx.Client, path: str = "/settings/") -> httpx.Response:
    """Requests until one is refused (at most a share and one more)."""
    for _ in range(BURST + 1):
        response = client.get(path)
        if response.status_code == 429:
            return response
        assert response.status_code == 200, response.text[:300]
    raise AssertionError(f"{path}: never refused within {BURST + 1} requests")


async def _socket_opens(server: AppServer, session: str, path: str) -> bool:
    url = server.url.replace("http://", "ws://") + path
    try:
        async with websockets.connect(
            url, origin=server.url, additional_headers={"Cookie": f"sessionid={session}"}
        ):
            return True
    except websockets.InvalidStatus as refused:
        assert refused.response.status_code == 403
        return False


def test_a_user_over_her_share_is_refused_on_every_way_in_and_another_is_served(served):
    server, users = served
    alice, bob = users["alice"], users["bob"]
    assert bob["client"].get("/settings/").status_code == 200  # bob's session looked up

    page = _spend(alice["client"])
    assert page.headers["Retry-After"].isdigit()
    assert "Too many requests" in page.text

    partial = alice["client"].get("/sidebar/", headers={"HX-Request": "true"})
    assert partial.status_code == 429
    assert json.loads(partial.headers["HX-Trigger"])["tooManyRequests"]["retryAfter"] >= 1
    assert 'hx-swap-oob="beforeend:#toasts"' in partial.text

    turn = alice["client"].post(
        f"/api/conversations/{alice['conversation']}/messages",
        json={"content": "hello"},
        headers={"Idempotency-Key": "k-1"},
    )
    assert turn.status_code == 429
    assert turn.json()["error"]["limit"] == "WEB_USER_RATE"
    assert turn.headers["Retry-After"].isdigit()

    path = f"/ws/conversations/{alice['conversation']}/"
    assert asyncio.run(_socket_opens(server, alice["session"], path)) is False

    # Bob, on the same address, at the same time: served on each way in.
    assert bob["client"].get("/settings/").status_code == 200
    assert bob["client"].get("/sidebar/", headers={"HX-Request": "true"}).status_code == 200
    path = f"/ws/conversations/{bob['conversation']}/"
    assert asyncio.run(_socket_opens(server, bob["session"], path)) is True


def test_a_message_over_the_share_on_an_open_socket_is_refused_with_a_toast(served):
    server, users = served
    carol = users["carol"]

    async def talk() -> str:
        url = server.url.replace("http://", "ws://") + "/ws/events/"
        headers = {"Cookie": f"sessionid={carol['session']}"}
        async with websockets.connect(url, origin=server.url, additional_headers=headers) as ws:
            for _ in range(BURST + 1):  # the opening looked her session up: all hers
                await ws.send(json.dumps({"hello": "there"}))
            while "Too many requests" not in (frame := await asyncio.wait_for(ws.recv(), 30)):
                pass
            return frame

    frame = asyncio.run(talk())
    assert 'hx-swap-oob="beforeend:#toasts"' in frame
    assert "Too many requests" in frame


def test_one_users_requests_under_way_are_capped_and_another_is_served(
    served, fake_anthropic_server
):
    server, users = served
    dan, bob = users["dan"], users["bob"]
    assert dan["client"].get("/settings/").status_code == 200  # dan's session, and a CSRF cookie
    fake_anthropic_server.reset()
    fake_anthropic_server.reply("A long answer that takes its time to come.", hold=True)
    token = dan["client"].cookies["csrftoken"]

    def turn() -> httpx.Response:
        return dan["client"].post(
            f"/api/conversations/{dan['conversation']}/messages",
            json={"content": "Tell me a story"},
            headers={"Idempotency-Key": "dan-1", "X-CSRFToken": token},
        )

    async def held_turn_and_more() -> tuple[httpx.Response, httpx.Response, int]:
        under_way = asyncio.create_task(asyncio.to_thread(turn))
        await asyncio.to_thread(fake_anthropic_server.held.wait, 30)
        assert fake_anthropic_server.held.is_set(), "the turn never reached Claude"
        refused = await asyncio.to_thread(dan["client"].get, "/settings/")
        served_status = (await asyncio.to_thread(bob["client"].get, "/settings/")).status_code
        fake_anthropic_server.release()
        return await under_way, refused, served_status

    answered, refused, bob_status = asyncio.run(held_turn_and_more())
    assert refused.status_code == 429
    assert "Too many requests" in refused.text
    assert bob_status == 200
    assert answered.status_code == 201


def test_an_anonymous_flood_from_one_address_is_refused_and_signed_in_users_are_not(served):
    server, users = served
    assert users["bob"]["client"].get("/settings/").status_code == 200
    with httpx.Client(base_url=server.url, timeout=30) as anonymous:
        got = [anonymous.get("/accounts/login/").status_code for _ in range(10)]
    assert 429 in got and got[-1] == 429
    assert set(got) <= {200, 429}
    assert users["bob"]["client"].get("/settings/").status_code == 200
