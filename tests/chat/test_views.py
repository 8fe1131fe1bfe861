"""The chat pages as a logged-in user sees them (and a stranger does not)."""

import json

import pytest

from chat.models import Conversation, Message, UserPreferences
from tests.fixtures.builders import make_conversation
from tests.fixtures.users import PASSWORD

pytestmark = pytest.mark.django_db


def test_it_requires_login_everywhere(client):
    for url in ["/", "/c/1/", "/settings/", "/sidebar/"]:
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_it_signs_up_and_logs_in_a_new_user(client, django_user_model):
    response = client.post(
        "/accounts/signup/",
        {"username": "carol", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302
    assert django_user_model.objects.filter(username="carol").exists()
    page = client.get("/")
    assert page.status_code == 200
    assert "carol" in page.content.decode()


def test_it_shows_signup_errors(client):
    response = client.post(
        "/accounts/signup/", {"username": "dave", "password1": "x", "password2": "y"}
    )
    assert response.status_code == 400
    assert "didn’t match" in response.content.decode()


def test_it_logs_in_and_out(client, alice):
    response = client.post("/accounts/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get("/").status_code == 200
    client.post("/accounts/logout/")
    assert client.get("/").status_code == 302


def test_it_groups_the_sidebar_by_recency_with_pinned_first(alice_client, alice, bob):
    make_conversation(alice, "Older one", days_ago=30)
    make_conversation(alice, "Last week", days_ago=4)
    make_conversation(alice, "Yesterday talk", days_ago=1)
    make_conversation(alice, "Fresh talk")
    make_conversation(alice, "Pinned old", days_ago=60, pinned=True)
    make_conversation(bob, "Bob's secret")

    html = alice_client.get("/").content.decode()

    order = ["Pinned", "Pinned old", "Today", "Fresh talk", "Yesterday", "Yesterday talk",
             "Previous 7 days", "Last week", "Older", "Older one"]  # fmt: skip
    positions = [html.index(f">{text}<") for text in order]
    assert positions == sorted(positions)
    assert "Bob&#x27;s secret" not in html and "Bob's secret" not in html


def test_it_hides_other_users_conversations(alice_client, bob):
    theirs = make_conversation(bob, "Bob's")
    assert alice_client.get(f"/c/{theirs.pk}/").status_code == 404
    assert alice_client.post(f"/c/{theirs.pk}/delete/").status_code == 404
    assert Conversation.objects.filter(pk=theirs.pk).exists()


def test_it_renders_messages_as_safe_markdown(alice_client, alice):
    conversation = make_conversation(alice, "Code")
    Message.objects.create(conversation=conversation, role="user", content="<b>hi</b>")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Here:\n\n```python\nprint(1)\n```\n\n- one\n- two\n\n<script>alert(1)</script>"
        "\n\n[click](javascript:alert(2))",
    )

    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()

    assert '<code class="language-python">print(1)' in html
    assert "<li>one</li>" in html
    assert "<script>alert(1)" not in html and "&lt;script&gt;alert(1)" in html
    assert 'href="javascript:' not in html
    assert "&lt;b&gt;hi&lt;/b&gt;" in html
    assert 'ws-connect="/ws/conversations/' in html


def test_it_shows_tool_calls_collapsed_with_their_summary(alice_client, alice):
    conversation = make_conversation(alice, "Tools")
    Message.objects.create(
        conversation=conversation,
        role="assistant",
        content="Found it.",
        tool_calls=[
            {
                "id": "toolu_1",
                "name": "search_memories",
                "input": {"query": "<ski>"},
                "result": "{}",
                "is_error": False,
                "summary": "Searched memories — 2 results",
            }
        ],  # fmt: skip
    )
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert '<details class="tool-call" id="tool-toolu_1">' in html
    assert "Searched memories — 2 results" in html
    assert "&lt;ski&gt;" in html


def test_it_starts_a_new_chat_from_the_first_message(alice_client, alice):
    response = alice_client.post("/c/new/", {"content": "Plan my ski trip", "model": ""})
    conversation = Conversation.objects.get(user=alice)
    assert response["Location"] == f"/c/{conversation.pk}/"
    assert conversation.title == "Plan my ski trip"
    assert list(conversation.messages.values_list("role", "content")) == [
        ("user", "Plan my ski trip")
    ]


def test_it_refuses_an_empty_first_message(alice_client, alice):
    response = alice_client.post("/c/new/", {"content": "   "})
    assert response.status_code == 400
    assert "must not be empty" in response.content.decode()
    assert not Conversation.objects.filter(user=alice).exists()


def test_it_renames_pins_and_deletes(alice_client, alice):
    conversation = make_conversation(alice, "Old name")
    headers = {"HX-Request": "true"}

    html = alice_client.post(
        f"/c/{conversation.pk}/rename/", {"title": "  New   name "}, headers=headers
    ).content.decode()
    assert ">New name<" in html
    html = alice_client.post(f"/c/{conversation.pk}/pin/", headers=headers).content.decode()
    assert "Pinned" in html and "Unpin" in html
    conversation.refresh_from_db()
    assert (conversation.title, conversation.pinned) == ("New name", True)

    response = alice_client.post(
        f"/c/{conversation.pk}/delete/", {"current": conversation.pk}, headers=headers
    )
    assert json.loads(response["HX-Trigger"]) == {"chatDeleted": {"to": "/"}}
    assert not Conversation.objects.filter(pk=conversation.pk).exists()


def test_deleting_the_chat_the_page_shows_sends_the_page_to_a_new_chat(alice_client, alice):
    # A row of "Show more" knows no open chat: the page's own address says it.
    shown, other = make_conversation(alice, "Shown"), make_conversation(alice, "Other")
    url = f"http://testserver/c/{shown.pk}/?m=3"
    headers = {"HX-Request": "true", "HX-Current-URL": url}

    kept = alice_client.post(f"/c/{other.pk}/delete/", {"current": ""}, headers=headers)
    left = alice_client.post(f"/c/{shown.pk}/delete/", {"current": ""}, headers=headers)

    assert "HX-Trigger" not in kept and ">Shown<" in kept.content.decode()
    assert json.loads(left["HX-Trigger"]) == {"chatDeleted": {"to": "/"}}
    assert not Conversation.objects.filter(user=alice).exists()


def test_it_refuses_an_empty_title(alice_client, alice):
    conversation = make_conversation(alice, "Keep me")
    response = alice_client.post(f"/c/{conversation.pk}/rename/", {"title": " "})
    assert response.status_code == 400
    conversation.refresh_from_db()
    assert conversation.title == "Keep me"


def test_it_changes_the_model_from_the_header(alice_client, alice):
    conversation = make_conversation(alice, "Models")
    ok = alice_client.post(
        f"/c/{conversation.pk}/model/", {"model": "claude-opus-5-5"}, headers={"HX-Request": "true"}
    )
    bad = alice_client.post(f"/c/{conversation.pk}/model/", {"model": "gpt-4"})
    assert ok.status_code == 204 and bad.status_code == 400
    conversation.refresh_from_db()
    assert conversation.model == "claude-opus-5-5"
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert '<option value="claude-opus-5-5" selected>' in html


def test_it_pages_the_sidebar(alice_client, alice):
    for n in range(45):
        make_conversation(alice, f"Chat number {n}", days_ago=n)
    first = alice_client.get("/").content.decode()
    assert "Chat number 39" in first and "Chat number 40" not in first
    assert "Show more" in first
    more = alice_client.get("/sidebar/?offset=40", headers={"HX-Request": "true"}).content.decode()
    assert "Chat number 40" in more and "Chat number 44" in more and "Show more" not in more


def test_it_saves_custom_instructions(alice_client, alice):
    response = alice_client.post(
        "/settings/",
        {"custom_instructions": "Call me Captain.", "default_model": "claude-haiku-5-5"},
    )
    assert response.status_code == 200
    assert "Settings saved." in response.content.decode()
    prefs = UserPreferences.objects.get(user=alice)
    assert (prefs.custom_instructions, prefs.default_model) == (
        "Call me Captain.",
        "claude-haiku-5-5",
    )


def test_it_labels_the_offline_responder(alice_client, settings):
    settings.ANTHROPIC_API_KEY = ""
    assert "Offline responder" in alice_client.get("/").content.decode()
    settings.ANTHROPIC_API_KEY = "sk-real"
    assert "offline-badge" not in alice_client.get("/").content.decode()


def test_it_includes_the_memory_placeholders(alice_client, alice):
    conversation = make_conversation(alice, "Memory")
    Message.objects.create(conversation=conversation, role="assistant", content="Hi")
    html = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert 'class="message-actions"' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html


def test_it_renders_a_big_conversation_page_in_a_fixed_number_of_queries(
    alice_client, alice, django_assert_max_num_queries
):
    conversations = [make_conversation(alice, f"Chat {n}") for n in range(60)]
    for conversation in conversations[:3]:
        Message.objects.bulk_create(
            Message(conversation=conversation, role=role, content=f"{role} {i}")
            for i, role in enumerate(["user", "assistant"] * 20)
        )
    # The chat's 8, and the memory widgets' 2 (is memory paused? which answers had a recall?).
    with django_assert_max_num_queries(10):
        response = alice_client.get(f"/c/{conversations[0].pk}/")
    assert response.content.decode().count('class="message ') == 40


def test_it_starts_a_new_chat_with_the_chosen_model(alice_client, alice):
    alice_client.post("/c/new/", {"content": "Hi", "model": "claude-haiku-5-5"})
    assert Conversation.objects.get(user=alice).model == "claude-haiku-5-5"
    response = alice_client.post("/c/new/", {"content": "Hi", "model": "gpt-9"})
    assert response.status_code == 400
    assert "unknown model" in response.content.decode()
    assert Conversation.objects.filter(user=alice).count() == 1


def test_it_fills_its_page_slots_from_the_settings(alice_client, alice, settings):
    settings.MCP_MEMORY_ENABLED = True  # the widgets render; none calls the server here
    conversation = make_conversation(alice, "Slots", "Hello", "Hi there")
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    preferences = alice_client.get("/settings/").content.decode()
    # The memory app fills them by default: panel, indicator, save button, settings link.
    assert 'class="memory-panel"' in page and 'id="memory-indicator"' in page
    assert 'class="memory-save"' in page
    assert 'href="/memory/settings/">Memory settings</a>' in preferences

    settings.CHAT_PAGE_SLOTS = {"topbar": ["memory/indicator.html"]}
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    preferences = alice_client.get("/settings/").content.decode()

    assert 'id="memory-indicator"' in page
    assert "memory-panel" not in page and "memory-save" not in page
    assert "Memory settings" not in preferences
    assert "Hi there" in page  # the page itself is whole


def test_a_new_chat_is_titled_without_markdown(alice_client, alice):
    alice_client.post("/c/new/", {"content": "## **Plan** a *ski* trip to `Chamonix` <3"})
    assert Conversation.objects.get(user=alice).title == "Plan a ski trip to Chamonix <3"


def test_closed_sign_up_says_so_and_refuses(client, settings, django_user_model):
    settings.SIGNUP_OPEN = False
    page = client.get("/accounts/signup/")
    response = client.post(
        "/accounts/signup/",
        {"username": "carol", "password1": PASSWORD, "password2": PASSWORD},
    )

    assert page.status_code == 403 and "Sign-up is closed" in page.content.decode()
    assert 'name="password1"' not in page.content.decode()
    assert response.status_code == 403
    assert not django_user_model.objects.filter(username="carol").exists()


def test_the_login_page_offers_sign_up_only_while_it_is_open(client, settings):
    assert 'href="/accounts/signup/"' in client.get("/accounts/login/").content.decode()
    settings.SIGNUP_OPEN = False
    closed = client.get("/accounts/login/").content.decode()
    assert 'href="/accounts/signup/"' not in closed and "Ask the administrator" in closed


def test_with_sign_up_closed_the_admin_creates_accounts_that_log_in(
    admin_client, client, settings, django_user_model
):
    settings.SIGNUP_OPEN = False
    response = admin_client.post(
        "/admin/auth/user/add/",
        {"username": "erin", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    logged_in = client.post("/accounts/login/", {"username": "erin", "password": PASSWORD})
    assert logged_in.status_code == 302 and client.get("/").status_code == 200


def test_closed_sign_up_is_said_in_french(client, settings):
    settings.SIGNUP_OPEN = False
    page = client.get("/accounts/signup/", headers={"Accept-Language": "fr"})
    assert "Les inscriptions sont fermées sur ce serveur." in page.content.decode()
