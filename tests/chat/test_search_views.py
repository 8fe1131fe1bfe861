"""Search chats as a client sees it: the JSON API, the sidebar fragment, the page at a hit."""

import pytest

from chat import selectors
from tests.fixtures.builders import add_message, make_conversation

pytestmark = pytest.mark.django_db


def test_it_answers_json_with_the_users_own_matches(alice_client, alice, bob):
    chat = make_conversation(alice, "Ski", "Where to ski in March?", "Try Val Thorens.")
    make_conversation(bob, "Bob ski", "Val Thorens is Bob's favourite.")

    response = alice_client.get("/api/conversations/search", {"q": "thorens"})

    assert response.status_code == 200
    body = response.json()
    answer = chat.messages.get(role="assistant")
    assert body["query"] == "thorens"
    assert [r["message_id"] for r in body["results"]] == [answer.pk]
    result = body["results"][0]
    assert result["conversation_id"] == chat.pk
    assert result["conversation_title"] == "Ski"
    assert result["role"] == "assistant"
    assert result["snippet"] == "Try Val Thorens."
    assert result["snippet_html"] == "Try Val <mark>Thorens</mark>."
    assert result["url"] == f"/c/{chat.pk}/?m={answer.pk}#message-{answer.pk}"


def test_it_limits_the_results(alice_client, alice):
    for n in range(8):
        make_conversation(alice, f"Tea {n}", f"Green tea number {n}")

    body = alice_client.get("/api/conversations/search", {"q": "tea", "limit": 3}).json()

    assert len(body["results"]) == 3


def test_it_requires_login(client):
    response = client.get("/api/conversations/search", {"q": "ski"})

    assert response.status_code == 401
    assert response.json()["error"]["reason"] == "login required"


@pytest.mark.parametrize(
    ("params", "field", "reason"),
    [
        ({}, "q", "is required"),
        ({"q": "   "}, "q", "must not be empty"),
        ({"q": "x" * 10_000}, "q", "must be at most 1000 characters"),
        ({"q": "ski", "limit": "many"}, "limit", "must be an integer"),
        ({"q": "ski", "limit": "0"}, "limit", "must be an integer between 1 and 50"),
        (
            {"q": "ski", "limit": "99999999999999999999999"},
            "limit",
            "must be an integer between 1 and 50",
        ),
    ],
)
def test_it_names_the_field_of_bad_input(alice_client, params, field, reason):
    response = alice_client.get("/api/conversations/search", params)

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert reason in response.json()["error"]["reason"]


@pytest.mark.parametrize(
    "raw_query",
    [
        "%22",  # "
        "NEAR(ski%20lake)",
        "*",
        "-ski",
        "content:ski",
        "ski%ED%A0%80",  # a lone surrogate, as UTF-8 bytes no decoder accepts
        "ski%00",
        "%FF%FE",
        "ski&q=lake",
        "a" * 1000,
    ],
)
def test_it_answers_hostile_queries_without_failing(alice_client, alice, raw_query):
    chat = make_conversation(alice, "Snow", "Ski near the lake")

    response = alice_client.get(f"/api/conversations/search?q={raw_query}")

    assert response.status_code == 200
    assert {r["conversation_id"] for r in response.json()["results"]} <= {chat.pk}


def test_it_refuses_other_methods(alice_client):
    assert alice_client.post("/api/conversations/search?q=ski").status_code == 405


def test_it_renders_the_sidebar_results_escaped(alice_client, alice):
    chat = make_conversation(alice, "<i>Title</i>", "A <b>bold</b> plan for Kyoto")

    response = alice_client.get("/search/", {"q": "kyoto"}, headers={"HX-Request": "true"})

    html = response.content.decode()
    message = chat.messages.get()
    assert response.status_code == 200
    assert html.lstrip().startswith('<div id="search-results"')
    assert f'href="/c/{chat.pk}/?m={message.pk}#message-{message.pk}"' in html
    assert "A &lt;b&gt;bold&lt;/b&gt; plan for <mark>Kyoto</mark>" in html
    assert "&lt;i&gt;Title&lt;/i&gt;" in html
    assert "<b>" not in html and "<i>" not in html


def test_it_says_when_nothing_matches(alice_client, alice):
    make_conversation(alice, "Chat", "Nothing relevant")

    html = alice_client.get("/search/", {"q": "zanzibar"}, headers={"HX-Request": "true"})

    assert "No chats match “zanzibar”." in html.content.decode()


def test_it_shows_the_results_in_the_page_without_javascript(alice_client, alice):
    make_conversation(alice, "Trip", "Flights to Reykjavik")

    response = alice_client.get("/search/", {"q": "reykjavik"})

    html = response.content.decode()
    assert '<aside class="sidebar"' in html
    assert "<mark>Reykjavik</mark>" in html
    assert 'value="reykjavik"' in html


def test_it_redirects_anonymous_visitors_to_login(client):
    response = client.get("/search/", {"q": "ski"})

    assert response.status_code == 302
    assert response.url.startswith("/accounts/login/")


def test_it_opens_a_long_conversation_at_an_old_message(alice_client, alice, settings):
    chat = make_conversation(alice, "Long")
    messages = [add_message(chat, f"message number {n}") for n in range(300)]
    old = messages[20]

    html = alice_client.get(f"/c/{chat.pk}/", {"m": old.pk}).content.decode()

    assert f'id="message-{old.pk}"' in html
    assert f'id="message-{messages[20 - selectors.CONTEXT_BEFORE].pk}"' in html
    assert f'id="message-{messages[20 - selectors.CONTEXT_BEFORE - 1].pk}"' not in html
    assert f'id="message-{messages[-1].pk}"' in html
    shown_after = 20 + selectors.CONTEXT_AFTER
    hidden = 300 - selectors.MESSAGES_SHOWN - shown_after - 1
    assert f"{hidden} later messages not shown" in html
    positions = [html.index(f'id="message-{m.pk}"') for m in (old, messages[-1])]
    assert positions == sorted(positions)


def test_it_ignores_a_message_id_from_elsewhere(alice_client, alice, bob):
    chat = make_conversation(alice, "Mine", "hello")
    other = make_conversation(bob, "Bob's", "secret of bob")

    response = alice_client.get(f"/c/{chat.pk}/", {"m": other.messages.get().pk})

    assert response.status_code == 200
    assert "secret of bob" not in response.content.decode()
    assert alice_client.get(f"/c/{chat.pk}/", {"m": "1e9; DROP"}).status_code == 200
