"""The memory's state said truthfully (issue 23): the header indicator says "paused" while
memory is paused and "off in this chat" in a chat whose memory is off; such a chat offers
no Save, and refuses one; its menu says what holds; the on/off switches live in one place,
the memory page's Controls (the settings page keeps recall's tuning)."""

import pytest

from memory.client import controls, services
from memory.models import MemorySettings
from tests.fixtures.builders import make_conversation

pytestmark = pytest.mark.django_db


def _chat_off(user):
    chat = make_conversation(user, "Off here", "Remember that I like jazz", "Noted.")
    controls.set_conversation_memory(conversation=chat, on=False)
    return chat


def test_the_indicator_says_paused_while_memory_is_paused(memory_server, alice, alice_client):
    services.add_thought(user=alice, content="Alice keeps bees")
    controls.set_paused(user=alice, paused=True)

    html = alice_client.get("/memory/indicator").content.decode()

    assert "Memory active" not in html
    assert 'title="Memory paused - 1 memory"' in html and "memory-paused" in html
    assert "Memory is paused: nothing new is saved." in html
    controls.set_paused(user=alice, paused=False)
    assert "Memory active - 1 memory" in alice_client.get("/memory/indicator").content.decode()


def test_the_quick_indicator_says_paused_without_asking_the_server(
    memory_server, alice, alice_client, caplog
):
    controls.set_paused(user=alice, paused=True)
    services.memory_status(f"user-{alice.pk}")  # connected
    caplog.clear()

    html = alice_client.get("/memory/indicator", {"quick": "1"}).content.decode()

    assert "memory-paused" in html and 'title="Memory paused"' in html
    assert "MCP call" not in caplog.text  # a local fact, said at once
    # It then loads the full indicator, with the server's figures.
    assert 'hx-get="/memory/indicator" hx-trigger="load"' in html


def test_the_indicator_says_memory_is_back_once(memory_server, alice, alice_client, settings):
    down = alice_client.get("/memory/indicator").content.decode()
    assert "Memory is back" not in down

    back = alice_client.get("/memory/indicator", {"was": "down"}).content.decode()
    assert "status-connected" in back and "Memory is back" in back
    assert 'hx-get="/memory/indicator" hx-trigger="every 30s"' in back  # not again


def test_an_unavailable_indicator_asks_whether_memory_is_back(no_memory_server, alice_client):
    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-disconnected" in html and "Memory is back" not in html
    assert 'hx-get="/memory/indicator?was=down" hx-trigger="every 5s"' in html


def test_a_chat_with_memory_off_says_so_and_offers_no_save(memory_server, alice, alice_client):
    chat = _chat_off(alice)

    page = alice_client.get(f"/c/{chat.pk}/").content.decode()
    indicator = alice_client.get("/memory/indicator", {"conversation": chat.pk}).content.decode()

    assert "memory-save-button" not in page
    assert "Memory off in this chat" in page
    assert f"/memory/indicator?quick=1&amp;conversation={chat.pk}" in page  # this chat's header
    assert 'title="Memory off in this chat"' in indicator and "Memory active" not in indicator


def test_a_chat_with_memory_off_refuses_a_save(memory_server, alice, alice_client):
    chat = _chat_off(alice)

    answer = alice_client.post(f"/memory/save/{chat.pk}", {}).content.decode()

    assert "Memory off in this chat" in answer and "Saved" not in answer
    assert services.list_memories(user=alice)["total"] == 0


def test_the_indicator_ignores_another_users_chat(memory_server, alice, bob, alice_client):
    bobs = _chat_off(bob)
    html = alice_client.get("/memory/indicator", {"conversation": bobs.pk}).content.decode()
    assert "Memory off in this chat" not in html
    for junk in ("abc", "-1", "9" * 30):
        assert alice_client.get("/memory/indicator", {"conversation": junk}).status_code == 200


def test_the_menu_says_memory_is_paused_everywhere(memory_server, alice, alice_client):
    chat = make_conversation(alice, "Chat", "Hello", "Hi")
    controls.set_paused(user=alice, paused=True)

    page = alice_client.get(f"/c/{chat.pk}/").content.decode()

    menu = page.split(f'id="memory-switch-{chat.pk}"')[1].split("</form>")[0]
    assert "Memory: on in this chat" in menu and "Paused for every chat" in menu


def test_memory_is_switched_on_and_off_in_one_place(memory_server, alice, alice_client):
    settings_page = alice_client.get("/memory/settings/").content.decode()
    assert 'name="memory_enabled"' not in settings_page
    assert "/memory/#memory-controls" in settings_page

    page = alice_client.get("/memory/").content.decode()
    assert 'id="control-enabled" role="switch" aria-checked="true"' in page
    assert 'id="control-paused"' in page

    answer = alice_client.post("/memory/controls", {"control": "enabled", "on": ""})
    assert 'id="control-enabled" role="switch" aria-checked="false"' in answer.content.decode()
    assert MemorySettings.for_user(alice).memory_enabled is False
    # Saving recall's tuning leaves the switch as it is.
    tuning = {"auto_retrieve": "on", "max_results": "5", "min_score": "0.5"}
    alice_client.post("/memory/settings/", tuning)
    assert MemorySettings.for_user(alice).memory_enabled is False
    alice_client.post("/memory/controls", {"control": "enabled", "on": "on"})
    assert MemorySettings.for_user(alice).memory_enabled is True
    alice_client.post("/memory/settings/", tuning)
    assert MemorySettings.for_user(alice).memory_enabled is True
