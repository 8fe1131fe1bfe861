"""The admin for backed-up conversations: list, filters, search, inline, backup action."""

import pytest

from memory.client import services
from tests.fixtures.builders import make_conversation


@pytest.fixture
def admin_client(client, django_user_model):
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "pw-123456")
    client.force_login(admin)
    return client


def test_it_lists_conversations_with_backup_pin_user_and_message_count(admin_client, alice):
    make_conversation(alice, "Backed up chat", "a", "b", "c", has_memory_backup=True, pinned=True)

    html = admin_client.get("/admin/chat/conversation/").content.decode()

    assert "Backed up chat" in html
    for column in (
        "column-has_memory_backup",
        "column-pinned",
        "column-user",
        "column-message_count",
    ):
        assert column in html
    assert '<td class="field-message_count">3</td>' in html
    assert "By has memory backup" in html


def test_it_filters_by_backup_state(admin_client, alice):
    make_conversation(alice, "Saved one", "x", has_memory_backup=True)
    make_conversation(alice, "Unsaved one", "y")

    html = admin_client.get(
        "/admin/chat/conversation/", {"has_memory_backup__exact": "1"}
    ).content.decode()

    assert "Saved one" in html
    assert "Unsaved one" not in html


def test_it_searches_titles_and_message_text(admin_client, alice):
    make_conversation(alice, "Weekend plans", "Let's talk about the aquarium visit")
    make_conversation(alice, "Aquarium ideas", "fish")
    make_conversation(alice, "Taxes", "deductions")

    html = admin_client.get("/admin/chat/conversation/", {"q": "aquarium"}).content.decode()

    assert "Weekend plans" in html and "Aquarium ideas" in html
    assert "Taxes" not in html


def test_it_shows_the_messages_inline(admin_client, alice):
    conversation = make_conversation(alice, "Inline", "first question", "first answer")

    html = admin_client.get(f"/admin/chat/conversation/{conversation.pk}/change/").content.decode()

    assert "first question" in html and "first answer" in html


def test_it_backs_up_selected_conversations_to_their_owners_memory(
    memory_server, admin_client, alice
):
    conversation = make_conversation(alice, "Garden", "When should I plant garlic?", "In autumn.")

    response = admin_client.post(
        "/admin/chat/conversation/",
        {"action": "back_up_to_memory", "_selected_action": [conversation.pk]},
        follow=True,
    )

    assert "Backed up 1 conversation(s) to memory." in response.content.decode()
    conversation.refresh_from_db()
    assert conversation.has_memory_backup
    found = services.search_memories(user=alice, query="plant garlic")["results"]
    assert "When should I plant garlic?" in found[0]["content"]


def test_it_reports_a_backup_that_could_not_reach_the_server(admin_client, alice, no_memory_server):
    conversation = make_conversation(alice, "Garden", "question", "answer")

    response = admin_client.post(
        "/admin/chat/conversation/",
        {"action": "back_up_to_memory", "_selected_action": [conversation.pk]},
        follow=True,
    )

    assert "Stopped after 0 backup(s): memory unavailable" in response.content.decode()
    conversation.refresh_from_db()
    assert not conversation.has_memory_backup
