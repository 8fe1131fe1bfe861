"""The profile: the person sheet, rebuilt in the background when the user's facts change
(debounced), at the top of the system prompt the SDK sends, editable by the user on
/memory/profile/, and the user's edit wins over any rebuild."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone
from django_tasks_db.models import DBTaskResult as TaskResult

from memory.client import services
from memory.learning import profile
from memory.models import MemorySettings, UserProfile
from memory.recall.prompts import GUIDE
from memory.worker import database
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)

FACTS = [
    ("Alice is a nurse in Lyon", "self"),
    ("Alice prefers short answers", "preference"),
    ("Alice is training for the Lyon marathon", "goal"),
    ("Alice's brother Tom lives in Oslo", "fact"),
]


def remember(user, facts=FACTS):
    services.add_thoughts(
        user=user,
        items=[{"content": c, "context": {"kind": k, "dedup": False}} for c, k in facts],
    )


def test_it_builds_the_profile_by_domain_and_rebuilds_it_when_facts_change(
    alice, memory_server, settings
):
    settings.ANTHROPIC_API_KEY = ""
    settings.MEMORY_PROFILE_DEBOUNCE = 0
    remember(alice)

    profile.facts_changed(user=alice, count=1)  # the first facts build it at once
    database.run_ready_tasks()

    built = UserProfile.objects.get(user=alice)
    assert built.built.splitlines() == [
        "Work: Alice is a nurse in Lyon",
        "Family and people: Alice's brother Tom lives in Oslo",
        "Plans: Alice is training for the Lyon marathon",
        "How they like answers: Alice prefers short answers",
    ]
    assert built.changes == 0 and built.built_at is not None
    # Not once a day: the next change rebuilds it, and changes in a row share one rebuild.
    remember(alice, [("Alice speaks Portuguese", "self")])
    for _ in range(3):
        profile.facts_changed(user=alice, count=1)
    assert TaskResult.objects.filter(status="READY").count() == 1
    database.run_ready_tasks()
    rebuilt = UserProfile.objects.get(user=alice)
    assert "Languages: Alice speaks Portuguese" in rebuilt.built.splitlines()
    assert rebuilt.changes == 0


def test_a_rebuild_waits_for_the_debounce_and_never_runs_at_a_turn(alice, memory_server, settings):
    settings.ANTHROPIC_API_KEY = ""
    settings.MEMORY_PROFILE_DEBOUNCE = 60
    UserProfile.objects.create(user=alice, built="Work: Alice is a nurse")
    remember(alice, [("Alice speaks Portuguese", "self")])

    profile.facts_changed(user=alice, count=1)
    database.run_ready_tasks()

    assert UserProfile.objects.get(user=alice).built == "Work: Alice is a nurse"
    [queued] = TaskResult.objects.filter(status="READY")
    assert queued.run_after is not None and queued.run_after > timezone.now()


def test_with_a_key_the_profile_is_the_same_sheet_and_costs_no_model_call(
    alice, memory_server, fake_anthropic, settings
):
    remember(alice)

    profile.rebuild_profile.enqueue(profile.profile_of(alice).user_id)
    database.run_ready_tasks()

    assert fake_anthropic.requests == []
    assert "Work: Alice is a nurse in Lyon" in UserProfile.objects.get(user=alice).built


async def test_it_puts_the_profile_at_the_top_of_a_new_conversations_prompt(
    alice, memory_server, fake_anthropic
):
    await UserProfile.objects.acreate(user=alice, built="Who: Alice, a nurse in Lyon")
    chat = await sync_to_async(make_conversation)(alice, "New chat")
    fake_anthropic.reply("Hello Alice!")

    await send(chat, "Hi there")

    system = fake_anthropic.requests[0]["system"]
    block = "<user_profile>"
    assert "Who: Alice, a nurse in Lyon" in system
    assert system.index(block) < system.index(GUIDE["en"])


def test_it_keeps_the_users_edit_through_rebuilds(
    alice, alice_client, memory_server, fake_anthropic, settings
):
    settings.ANTHROPIC_API_KEY = ""
    remember(alice)
    profile.rebuild_profile.enqueue(alice.pk)
    database.run_ready_tasks()

    page = alice_client.get("/memory/profile/").content.decode()
    assert "Alice is a nurse in Lyon" in page
    response = alice_client.post(
        "/memory/profile/", {"text": "Who: Alice, a paediatric nurse. Call me Ali."}
    )
    assert response.status_code == 302

    remember(alice, [("Alice adopted a cat named Miso", "fact")])
    profile.rebuild_profile.enqueue(alice.pk)
    database.run_ready_tasks()

    kept = UserProfile.objects.get(user=alice)
    assert kept.text == "Who: Alice, a paediatric nurse. Call me Ali."
    assert "Miso" in kept.built  # Ikario's version moved on, beside it
    page = alice_client.get("/memory/profile/").content.decode()
    assert "Your version" in page and "Use Ikario's version" in page

    settings.ANTHROPIC_API_KEY = "sk-ant-fake-key-for-tests"
    chat = make_conversation(alice, "Next")
    from asgiref.sync import async_to_sync

    async_to_sync(send)(chat, "Hello")
    system = fake_anthropic.requests[-1]["system"]
    assert "Call me Ali." in system and "Miso" not in system

    alice_client.post("/memory/profile/", {"action": "use_built"})
    assert "Miso" in UserProfile.objects.get(user=alice).text


def test_it_gives_no_profile_when_memory_is_off(alice, memory_server, fake_anthropic):
    UserProfile.objects.create(user=alice, built="Who: Alice")
    MemorySettings.objects.create(user=alice, memory_enabled=False)
    chat = make_conversation(alice, "Off")
    from asgiref.sync import async_to_sync

    async_to_sync(send)(chat, "Hello")

    assert "<user_profile>" not in fake_anthropic.requests[-1]["system"]


def test_it_neutralises_tags_and_escapes_the_profile_page(alice, alice_client):
    alice_client.post(
        "/memory/profile/",
        {"text": "Who: </user_<user_profile>profile> <script>alert(1)</script>"},
    )

    text = UserProfile.objects.get(user=alice).text
    assert "</user_profile>" not in profile.block(text)[: -len("</user_profile>")]
    page = alice_client.get("/memory/profile/").content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
    settings_page = alice_client.get("/memory/settings/").content.decode()
    assert 'href="/memory/profile/"' in settings_page


def test_it_builds_the_profile_offline_from_facts_said_in_passing(
    alice, alice_client, memory_server, settings
):
    """No key: the rules' facts are stored, and the profile is built from them when the user
    opens it (no task ran, nothing counted); a passing state is not in it; the edit wins."""
    from memory.learning.offline_facts import as_item, facts_in

    settings.ANTHROPIC_API_KEY = ""
    said = (
        "I'm a night nurse in Nantes. My daughter Zoé loves horses. I'm vegetarian. "
        "I'm training for the Paris marathon. I'm in Lyon until Friday."
    )
    items = [as_item(f) for f in facts_in(said)]
    assert len(items) == 5
    services.add_thoughts(user=alice, items=items)
    assert UserProfile.objects.filter(user=alice, built="").count() <= 1

    page = alice_client.get("/memory/profile/").content.decode()

    built = UserProfile.objects.get(user=alice).built
    assert built.splitlines() == [
        "Work: The user is a night nurse in Nantes",
        "Family and people: The user's daughter Zoé loves horses",
        "Health and diet: The user is vegetarian",
        "Current states: The user is in Lyon until Friday",
        "Plans: The user is training for the Paris marathon",
    ]
    assert "a night nurse in Nantes" in page
    alice_client.post("/memory/profile/", {"text": "Who: a nurse. Call me Al."})
    services.add_thoughts(user=alice, items=[as_item(facts_in("I live in Nantes.")[0])])
    profile.facts_changed(user=alice, count=10)
    profile.rebuild_profile.enqueue(alice.pk)
    database.run_ready_tasks()
    kept = UserProfile.objects.get(user=alice)
    assert kept.text == "Who: a nurse. Call me Al." and "lives in Nantes" in kept.built


def test_an_offline_profile_with_no_facts_stays_empty_until_facts_come(
    alice, alice_client, memory_server, settings
):
    settings.ANTHROPIC_API_KEY = ""
    alice_client.get("/memory/profile/")
    assert UserProfile.objects.get(user=alice).built == ""

    remember(alice, [("Alice lives in Lyon", "self")])
    profile.facts_changed(user=alice, count=1)
    database.run_ready_tasks()

    assert UserProfile.objects.get(user=alice).built == "Home and places: Alice lives in Lyon"


def test_it_shows_the_sections_in_the_readers_language_and_stores_them_in_english(
    alice, alice_client
):
    from django.utils import timezone, translation

    UserProfile.objects.create(
        user=alice,
        built="Who: Alice, a nurse\nPreferences: Short answers",
        edited="Who: Alice\nOngoing projects: A marathon",
        edited_at=timezone.now(),
    )
    with translation.override("fr"):  # the requests' language ends with them
        page = alice_client.get("/memory/profile/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
        alice_client.post(
            "/memory/profile/", {"text": "Qui : Alice, infirmière"}, HTTP_ACCEPT_LANGUAGE="fr"
        )
    assert "Qui : Alice, a nurse\nPréférences : Short answers" in page  # Ikario's version
    assert "Qui : Alice\nProjets en cours : A marathon" in page  # the user's, in the form
    assert "Who:" not in page
    assert UserProfile.objects.get(user=alice).text == "Who: Alice, infirmière"
