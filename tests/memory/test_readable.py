"""Memory that reads like a person's (issue 23): categories by a translated name with what
each is for, sources as the user's own chats by title, versions said in words, dates as
each language writes them, the French strings."""

import re

from django.utils import translation

from memory.client import services
from memory.display import versions
from memory.web.panels import _tooltip
from tests.fixtures.builders import make_conversation

EN = {"accept-language": "en"}
FR = {"accept-language": "fr-FR,fr;q=0.9"}


def _add(user, content, **context):
    return services.add_thought(user=user, content=content, context=context or None)["id"]


def test_it_names_each_category_in_the_readers_language_and_says_what_it_is_for(
    memory_server, alice, alice_client
):
    _add(alice, "Alice's first conversation with Ikario", category="fondatrice")

    english = alice_client.get("/memory/", headers=EN).content.decode()
    french = alice_client.get("/memory/", headers=FR).content.decode()

    # The stored value stays the French word (the badge's colour, the filter link).
    assert 'class="badge badge-fondatrice"' in english and "?category=fondatrice" in english
    assert ">Foundational</span>" in english and ">Fondatrice<" not in english
    assert "Key moments and first conversations: what shapes everything else." in english
    assert "In-depth discussions of a subject or an idea." in english
    assert "Everyday exchanges worth keeping for a while." in english
    assert ">Fondatrice</span>" in french
    assert "Les moments clés et les premiers échanges : ce qui fonde tout le reste." in french


def test_it_names_the_chat_a_memory_came_from_and_only_the_users_own(
    memory_server, alice, bob, alice_client
):
    lisbon = make_conversation(alice, "Trip to Lisbon", "Plan a trip", "Gladly")
    gone = make_conversation(alice, "Old chat")
    gone_id = gone.pk
    gone.delete()
    bobs = make_conversation(bob, "Bob's secret surprise party")
    own = _add(alice, "Alice wants to see Belém", source=f"conversation:{lisbon.pk}:7")
    _add(alice, "Alice likes trams", source=f"conversation:{gone_id}")
    _add(alice, "Alice likes custard tarts", source=f"conversation:{bobs.pk}:3")

    html = alice_client.get("/memory/", headers=EN).content.decode()

    assert f'href="/c/{lisbon.pk}/?m=7#message-7">From chat “Trip to Lisbon”</a>' in html
    assert html.count("From a chat that was deleted") == 2  # deleted, and never hers
    assert "surprise party" not in html and f"/c/{bobs.pk}/" not in html
    assert f"conversation:{lisbon.pk}" not in html.replace('placeholder="conversation:12"', "")
    # A title is text, never markup.
    hostile = make_conversation(alice, '<img src=x onerror=alert(1)>"')
    _add(alice, "Alice reads titles", source=f"conversation:{hostile.pk}")
    html = alice_client.get("/memory/", headers=EN).content.decode()
    assert (
        "<img src=x" not in html and "From chat “&lt;img src=x onerror=alert(1)&gt;&quot;”" in html
    )
    # The detail modal (the sidebar's) names it the same way.
    modal = alice_client.get(f"/memory/m/{own}", headers=FR).content.decode()
    assert f'href="/c/{lisbon.pk}/?m=7#message-7">De la conversation « Trip to Lisbon »</a>' in (
        modal
    )


def test_it_says_in_words_what_changed_between_versions(memory_server, alice, alice_client):
    memory_id = _add(alice, "Alice works as a lawyer in Lyon.", category="contextuelle")
    services.update_memory(
        user=alice, memory_id=memory_id, content="Alice works as a nurse in Lyon."
    )

    english = alice_client.get(f"/memory/m/{memory_id}/card", headers=EN).content.decode()
    french = alice_client.get(f"/memory/m/{memory_id}/card", headers=FR).content.decode()

    assert re.search(r"Changed on \d{1,2} [A-Z][a-z]{2} \d{4}: “lawyer” → “nurse”\.", english)
    assert "Before: “Alice works as a lawyer in Lyon.”" in english
    assert re.search(r"Modifié le \d{1,2} [a-zéû]{3,5}\.? \d{4} : « lawyer » → « nurse »", french)


def test_it_traces_a_concept_as_dated_sentences_not_word_lists(memory_server, alice, alice_client):
    _add(alice, "Alice works as a lawyer in Lyon", concepts=["job"], date="2026-01-10")
    _add(alice, "Alice works as a nurse in Lyon", concepts=["job"], date="2026-03-01")

    html = alice_client.get("/memory/trace", {"concept": "job"}, headers=EN).content.decode()
    french = alice_client.get("/memory/trace", {"concept": "job"}, headers=FR).content.decode()

    assert "First mentioned on 10 Jan 2026:" in html
    assert "Changed on 1 Mar 2026: “lawyer” → “nurse”" in html
    assert "new:" not in html and "no longer:" not in html and "days later" not in html
    assert "Première mention le 10 jan. 2026 :" in french
    assert "Modifié le 1 mars 2026 : « lawyer » → « nurse »" in french


def test_it_traces_an_edited_memory_through_its_versions(memory_server, alice, alice_client):
    _add(alice, "Alice studied law in Coimbra", concepts=["job"], date="2026-01-10")
    edited = _add(alice, "Alice works as a lawyer in Lyon", concepts=["job"], date="2026-03-01")
    services.update_memory(user=alice, memory_id=edited, content="Alice works as a nurse in Lyon")

    html = alice_client.get("/memory/trace", {"concept": "job"}, headers=EN).content.decode()

    said = re.findall(r'<p class="memory-timeline-said">([^<]*)</p>', html)
    assert said[:2] == ["First mentioned on 10 Jan 2026:", "Said differently on 1 Mar 2026:"]
    assert re.fullmatch(r"Changed on \d{1,2} [A-Z][a-z]{2} \d{4}: “lawyer” → “nurse”", said[2])
    assert html.index("Alice works as a lawyer in Lyon") < html.index("Alice works as a nurse")


def test_it_says_a_change_as_a_person_would():
    translation.activate("en")
    assert versions.change("I am a lawyer.", "I am a nurse.") == {
        "kind": "changed",
        "what": "“lawyer” → “nurse”",
    }
    said = versions.change("Alice lives in Lyon", "Alice lives in Lyon with Paul")
    assert said == {"kind": "changed", "what": "added “with Paul”"}
    said = versions.change("Alice really likes tea", "Alice likes tea.")
    assert said == {"kind": "changed", "what": "removed “really”"}
    assert versions.change("Alice likes tea", "alice likes TEA!")["kind"] == "same"
    assert versions.change("Alice likes tea", "Bob plays the horn daily")["kind"] == "rewritten"
    with translation.override("fr"):
        assert versions.change("un chat", "un chien")["what"] == "« chat » → « chien »"


def test_it_writes_dates_as_each_language_does(memory_server, alice, alice_client):
    _add(alice, "Alice skied at Chamonix", date="2026-11-26T10:00:00+00:00")

    english = alice_client.get("/memory/", headers=EN).content.decode()
    french = alice_client.get("/memory/", headers=FR).content.decode()
    results = alice_client.get("/memory/search", {"q": "Chamonix ski"}, headers=FR)

    assert ">26 Nov 2026</time>" in english
    assert ">26 nov. 2026</time>" in french and "26 Nov 2026" not in french
    assert ">26 nov. 2026</time>" in results.content.decode()


def test_it_speaks_the_specifications_french(memory_server, alice, alice_client):
    page = alice_client.get("/", headers=FR).content.decode()
    assert 'placeholder="Rechercher dans mes souvenirs..."' in page
    with translation.override("fr"):
        said = _tooltip({"status": "disconnected", "connected": False})
    assert said == "Mémoire déconnectée"

    conversation = make_conversation(alice, "Ski", "Plan a ski trip", "Chamonix is lovely")
    answer = conversation.messages.get(role="assistant")
    save = {"message_id": answer.pk, "category": "thematique"}
    hx = {**FR, "hx-request": "true"}
    first = alice_client.post(f"/memory/save/{conversation.pk}", save, headers=hx)
    again = alice_client.post(f"/memory/save/{conversation.pk}", save, headers=hx)
    assert "Sauvegardé" not in first.content.decode()
    assert "Déjà sauvegardé" in again.content.decode()
