"""A database outage as the chat page lives it, in headless Chromium: its socket closed,
the page says it is reconnecting and tries again, and once the database is back it is
connected again and answers.

The outage is real, as in test_database_outage.py: the app's SQLite folder moved away.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.fixtures.browser import AppServer, sign_up

pytestmark = pytest.mark.browser


@pytest.fixture
def server():
    # No API key: the local stand-in answers (chat/offline.py), no fake API to script.
    app = AppServer({"ANTHROPIC_API_KEY": ""})
    data = app.dir / "data"
    data.mkdir()
    app.env["DATABASE_URL"] = f"sqlite:///{data / 'db.sqlite3'}"
    app.start()
    yield app
    app.stop()


def a_conversation(app: AppServer, username: str) -> int:
    code = (
        "from django.contrib.auth.models import User; from chat.models import Conversation; "
        f"print(Conversation.objects.create(user=User.objects.get(username={username!r})).pk)"
    )
    return int(app.manage("shell", "-c", code).split()[-1])


def say(page, text: str):
    page.fill("#composer-input", text)
    page.press("#composer-input", "Enter")


def test_the_chat_page_reconnects_once_the_database_is_back(server, page):
    sockets = []
    page.on("websocket", lambda socket: sockets.append(socket))
    sign_up(page, server, "outage-reader")
    page.goto(f"{server.url}/c/{a_conversation(server, 'outage-reader')}/")
    answers = page.locator("article.message.assistant .content.markdown")  # each written
    say(page, "Hello?")
    expect(answers).to_have_count(1)  # the socket is open, the turn over
    notice = page.locator("#reconnecting")
    expect(notice).to_be_hidden()
    opened = len(sockets)

    data = server.dir / "data"
    data.rename(server.dir / "data.away")
    try:
        say(page, "Are you there?")  # the consumer cannot save it: the socket closes
        expect(notice).to_be_visible()
        expect(notice).to_have_text("Connection lost: reconnecting…")
        # Not saved: the message is back in the box, to be sent again.
        expect(page.locator("#composer-input")).to_have_value("Are you there?")
        with page.expect_websocket():  # opened again (and refused) while the database is away
            pass
        assert len(sockets) > opened
    finally:
        (server.dir / "data.away").rename(data)

    expect(notice).to_be_hidden(timeout=90_000)
    say(page, "Back?")
    expect(answers).to_have_count(2)
