"""/memory through Django's test client and the real memory server: browse, filter,
search, edit, delete and undo, trace, forget a topic, consistency, profile in place;
bad input named; everything escaped; alice's memories out of bob's reach."""

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from memory.client import services
from memory.models import DeletedMemory
from tests.fixtures.builders import make_conversation

XSS = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


def _add(user, content, **context):
    return services.add_thought(user=user, content=content, context=context or None)["id"]


def _page(client, **params):
    return client.get("/memory/", params)


def _fragment(client, **params):
    return client.get("/memory/", params, HTTP_HX_REQUEST="true")


def test_it_lists_every_memory_newest_first_twenty_a_page(memory_server, alice, alice_client):
    for n in range(23):
        _add(alice, f"Garden note number {n}")

    first = _page(alice_client).content.decode()
    second = _fragment(alice_client, page=2).content.decode()

    assert first.index("Garden note number 22") < first.index("Garden note number 21")
    assert "Garden note number 3" in first and "Garden note number 2<" not in first
    assert "23 memories, newest first" in first and "Page 1 of 2" in first
    assert 'id="memory-older"' in first
    assert "Garden note number 2<" in second and "Garden note number 0" in second
    assert "Garden note number 3<" not in second
    assert "<html" not in second  # the list fragment only


def test_it_filters_by_kind_category_tag_dates_and_source(memory_server, alice, alice_client):
    chat = make_conversation(alice, "Trip to Lisbon")
    _add(
        alice,
        "Ski in Chamonix",
        kind="fact",
        category="fondatrice",
        tags=["Montagne"],
        date="2025-01-10",
        source=f"conversation:{chat.pk}:8",
    )
    _add(
        alice,
        "Budget meeting",
        kind="note",
        category="contextuelle",
        tags=["work"],
        date="2026-03-01",
        source="import:notes",
    )

    def shown(**filters):
        html = _fragment(alice_client, **filters).content.decode()
        return [text for text in ("Ski in Chamonix", "Budget meeting") if text in html]

    assert shown(kind="fact") == ["Ski in Chamonix"]
    assert shown(category="contextuelle") == ["Budget meeting"]
    assert shown(tag="#montagne") == ["Ski in Chamonix"]
    assert shown(date_from="2026-01-01") == ["Budget meeting"]
    assert shown(date_to="2025-01-10") == ["Ski in Chamonix"]
    assert shown(source="conversation:") == ["Ski in Chamonix"]
    # The source is the chat by its title, a link to it at its message.
    html = _fragment(alice_client, kind="fact").content.decode()
    assert f'href="/c/{chat.pk}/?m=8#message-8">From chat “Trip to Lisbon”</a>' in html


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "text"])
def test_it_searches_in_each_mode_with_coloured_scores(memory_server, alice, alice_client, mode):
    _add(alice, "Alice learns the cello on Thursdays")
    _add(alice, "The quarterly report is due Friday")

    html = _fragment(alice_client, q="cello", mode=mode).content.decode()

    assert "Alice learns the cello on Thursdays" in html
    assert f"({mode.capitalize()})" in html  # the mode the server used, by its label
    assert 'class="score score-' in html


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"page": "0"}, "Page: Ensure this value is greater than or equal to 1."),
        ({"page": "99999999999"}, "Page: Ensure this value is less than or equal to"),
        ({"kind": "dream"}, "Kind: Select a valid choice."),
        ({"date_from": "2026-02-01", "date_to": "2026-01-01"}, "From: must be on or before"),
        ({"date_from": "2026-13-45"}, "From: Enter a valid date."),
        ({"q": "x" * 2001}, "Search: Ensure this value has at most 2000 characters"),
    ],
)
def test_it_refuses_bad_filters_naming_the_field(memory_server, alice_client, params, said):
    response = _fragment(alice_client, **params)
    assert response.status_code == 400
    assert said in response.content.decode()


def test_it_escapes_memories_on_the_page(memory_server, alice, alice_client):
    _add(alice, f"Nasty {XSS}", tags=[XSS])
    html = _page(alice_client).content.decode()
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html


def test_it_edits_a_memory_in_place_keeping_the_previous_version(
    memory_server, alice, alice_client
):
    memory_id = _add(alice, "Alice lives in Paris", tags=["city"])

    form = alice_client.get(f"/memory/m/{memory_id}/card", {"edit": "1"}).content.decode()
    assert 'name="content"' in form and "Alice lives in Paris</textarea>" in form
    response = alice_client.post(
        f"/memory/m/{memory_id}/edit",
        {"content": "Alice lives in Lyon", "category": "fondatrice", "tags": "city, #move"},
    )

    html = response.content.decode()
    assert response.status_code == 200 and f'id="memory-{memory_id}"' in html
    assert "Alice lives in Lyon" in html and "1 earlier version" in html
    record = services.get_memory(user=alice, memory_id=memory_id)
    assert record["content"] == "Alice lives in Lyon"
    assert record["metadata"]["category"] == "fondatrice"
    assert record["metadata"]["tags"] == ["city", "move"]


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"content": "", "category": "fondatrice"}, "This field is required."),
        ({"content": "ok", "category": "joyeuse"}, "Select a valid choice."),
        (
            {"content": "ok", "category": "fondatrice", "tags": ",".join(map(str, range(51)))},
            "at most 50 tags",
        ),
        ({"content": "<private>secret</private>", "category": "fondatrice"}, "content"),
        ({"content": "nul\x00byte", "category": "fondatrice"}, "Null characters are not allowed"),
        ({"content": "x" * 100_000, "category": "fondatrice"}, "at most 20000 characters"),
    ],
)
def test_it_refuses_a_bad_edit_and_changes_nothing(memory_server, alice, alice_client, data, said):
    memory_id = _add(alice, "Unchanged memory")
    response = alice_client.post(f"/memory/m/{memory_id}/edit", data)
    assert response.status_code == 400 and said in response.content.decode()
    assert services.get_memory(user=alice, memory_id=memory_id)["content"] == "Unchanged memory"


def test_it_deletes_with_undo_and_puts_back_the_same_memory(memory_server, alice, alice_client):
    memory_id = _add(alice, "Bob's birthday is in May", tags=["family"])
    services.update_memory(user=alice, memory_id=memory_id, content="Bob's birthday is May 3")

    deleted = alice_client.post(f"/memory/m/{memory_id}/delete").content.decode()
    assert "Memory deleted." in deleted and f"/memory/m/{memory_id}/undo" in deleted
    assert services.list_memories(user=alice)["total"] == 0

    restored = alice_client.post(f"/memory/m/{memory_id}/undo").content.decode()

    assert "Bob&#x27;s birthday is May 3" in restored and "1 earlier version" in restored
    record = services.get_memory(user=alice, memory_id=memory_id)
    assert record["metadata"]["tags"] == ["family"]
    assert not DeletedMemory.objects.filter(memory_id=memory_id).exists()


def test_it_deletes_for_good_once_the_undo_window_is_over(
    memory_server, alice, alice_client, settings
):
    settings.MEMORY_UNDO_SECONDS = 5
    memory_id = _add(alice, "Temporary thought")
    alice_client.post(f"/memory/m/{memory_id}/delete")
    DeletedMemory.objects.update(deleted_at=timezone.now() - timedelta(seconds=6))

    late = alice_client.post(f"/memory/m/{memory_id}/undo").content.decode()
    alice_client.post(f"/memory/m/{memory_id}/gone")

    assert "Too late to undo" in late
    assert services.list_memories(user=alice)["total"] == 0
    assert not DeletedMemory.objects.exists()


def test_it_traces_a_concept_from_a_memory(memory_server, alice, alice_client):
    _add(alice, "Alice started learning piano", concepts=["piano"], date="2024-01-01")
    _add(alice, "Alice plays piano duets now", concepts=["piano"], date="2025-06-01")

    page = _page(alice_client).content.decode()
    assert "/memory/trace?concept=piano" in page
    html = alice_client.get("/memory/trace", {"concept": "piano"}).content.decode()

    assert html.index("Alice started learning piano") < html.index("Alice plays piano duets")
    assert "How it evolved: piano" in html
    assert alice_client.get("/memory/trace", {"concept": ""}).status_code == 400


def test_it_forgets_a_topic_only_after_showing_what_goes(memory_server, alice, alice_client):
    ski = _add(alice, "Alice skis in Chamonix every February")
    _add(alice, "Alice's cat is called Miso")

    preview = alice_client.post("/memory/forget", {"topic": "skiing in Chamonix"}).content.decode()
    assert "Alice skis in Chamonix every February" in preview and "Miso" not in preview
    assert f'name="ids" value="{ski}"' in preview
    assert services.list_memories(user=alice)["total"] == 2  # nothing deleted yet

    done = alice_client.post(
        "/memory/forget", {"topic": "skiing in Chamonix", "confirm": "1", "ids": [ski]}
    )

    assert "1 memory about “skiing in Chamonix” forgotten." in done.content.decode()
    assert "memory-list-changed" in done.headers["HX-Trigger"]
    remaining = services.list_memories(user=alice)["memories"]
    assert [m["content"] for m in remaining] == ["Alice's cat is called Miso"]


def test_it_checks_a_statement_from_the_form(memory_server, alice, alice_client):
    _add(alice, "Alice lives in Paris", kind="fact")
    html = alice_client.post(
        "/memory/consistency", {"statement": "Alice does not live in Paris"}
    ).content.decode()
    assert 'id="consistency-result"' in html and "Contradicted by" in html
    assert "Alice lives in Paris" in html
    bad = alice_client.post("/memory/consistency", {"statement": ""})
    assert bad.status_code == 400 and "This field is required." in bad.content.decode()


def test_the_form_says_it_cannot_tell_rather_than_a_confident_score(
    memory_server, alice, alice_client
):
    _add(alice, f"Léa never drinks coffee {XSS}", kind="fact")
    html = alice_client.post(
        "/memory/consistency", {"statement": "Léa drinks green tea"}
    ).content.decode()
    result = html[html.index('id="consistency-result"') :]
    assert "can’t tell" in result and "100" not in result
    assert "the rules can’t tell" in result and "Léa never drinks coffee" in result
    assert "<script>alert" not in html


def test_it_edits_the_profile_in_place(memory_server, alice, alice_client, settings):
    form = alice_client.get("/memory/profile/inline", {"edit": "1"}).content.decode()
    assert "<textarea" in form
    saved = alice_client.post(
        "/memory/profile/inline", {"text": f"Alice, cellist in Lyon {XSS}"}
    ).content.decode()
    assert "Alice, cellist in Lyon" in saved and "<script>alert" not in saved
    assert alice.memory_profile.text.startswith("Alice, cellist in Lyon")
    too_long = alice_client.post(
        "/memory/profile/inline", {"text": "x" * (settings.MEMORY_PROFILE_MAX_CHARS + 1)}
    )
    assert too_long.status_code == 400


def test_it_keeps_bob_away_from_alices_memories(
    memory_server, alice, bob, alice_client, bob_client
):
    memory_id = _add(alice, "Alice's secret recipe")

    assert "Alice&#x27;s secret recipe" not in _page(bob_client).content.decode()
    assert "Alice" not in _fragment(bob_client, q="secret recipe").content.decode()
    card = bob_client.get(f"/memory/m/{memory_id}/card").content.decode()
    edit = bob_client.post(
        f"/memory/m/{memory_id}/edit", {"content": "Hijacked", "category": "fondatrice"}
    ).content.decode()
    delete = bob_client.post(f"/memory/m/{memory_id}/delete").content.decode()
    undo = bob_client.post(f"/memory/m/{memory_id}/undo").content.decode()
    for answer in (card, edit, delete):
        assert "This memory does not exist (any more)." in answer
    assert "Too late to undo" in undo
    assert (
        services.get_memory(user=alice, memory_id=memory_id)["content"] == "Alice's secret recipe"
    )
    forget = bob_client.post(
        "/memory/forget", {"topic": "recipe", "confirm": "1", "ids": [memory_id]}
    )
    assert "forgotten" not in forget.content.decode()
    assert services.list_memories(user=alice)["total"] == 1


def test_it_requires_a_login_everywhere(client):
    for path in ("/memory/", "/memory/m/abc/card", "/memory/trace?concept=x", "/memory/export"):
        response = client.get(path)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"]
    response = client.post("/memory/m/abc/delete")
    assert response.status_code == 302


def test_it_refuses_a_post_without_its_csrf_token(memory_server, alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    memory_id = _add(alice, "Protected memory")
    for path in (
        f"/memory/m/{memory_id}/delete",
        "/memory/forget",
        "/memory/reset",
        "/memory/controls",
    ):
        assert client.post(path, {"topic": "x"}).status_code == 403
    assert services.list_memories(user=alice)["total"] == 1


def test_it_answers_a_hostile_memory_id_with_a_message(memory_server, alice, alice_client):
    for memory_id in ("x" * 300, "%00", "..%2F..%2Fetc"):
        for response in (
            alice_client.get(f"/memory/m/{memory_id}/card"),
            alice_client.post(f"/memory/m/{memory_id}/delete"),
            alice_client.post(f"/memory/m/{memory_id}/undo"),
        ):
            assert response.status_code in (200, 404), (memory_id, response.status_code)
            if response.status_code == 200:
                assert 'role="alert"' in response.content.decode()


def test_it_stores_a_lone_surrogate_as_replacement_characters(memory_server, alice, alice_client):
    memory_id = _add(alice, "Unchanged memory")
    body = b"category=fondatrice&content=%ED%A0%80"  # a lone surrogate, UTF-8 encoded
    response = alice_client.post(
        f"/memory/m/{memory_id}/edit", body, content_type="application/x-www-form-urlencoded"
    )
    # Django decodes bad UTF-8 with replacement characters, as browsers send a lone surrogate.
    assert response.status_code == 200 and "\ufffd" in response.content.decode()
    stored = services.get_memory(user=alice, memory_id=memory_id)["content"]
    assert set(stored) == {"\ufffd"}


def test_it_says_memory_is_off_without_asking_the_server(alice, alice_client, settings):
    settings.MCP_MEMORY_ENABLED = False
    page = _page(alice_client)
    html = page.content.decode()
    assert page.status_code == 200
    assert "Memory is disabled on this server: there is nothing to show." in html
    assert 'id="memory-list-error"' not in html and "MCP_MEMORY_ENABLED" not in html
    chat = alice_client.get("/").content.decode()
    assert 'id="memory-page-link"' not in chat


# A search lists what is relevant (relevance_score >= contract.RELEVANT), says how many of
# how many, and keeps the rest behind a control the user opens on purpose.
CELLO = ["Alice learns the cello on Thursdays", "The cello teacher of Alice lives in Ghent"]
UNRELATED = [
    "The quarterly report is due Friday",
    "The neighbour of Alice repainted his fence green",
    "The bakery on the corner opens at seven",
]


def _shown_and_hidden(html: str) -> tuple[str, str]:
    """The list as it shows, and what waits behind "Show N less relevant"."""
    shown, _, hidden = html.partition('<details class="memory-less-relevant"')
    return shown, hidden


def test_a_search_shows_the_relevant_memories_and_the_rest_on_request(
    memory_server, alice, alice_client
):
    for content in CELLO + UNRELATED:
        _add(alice, content)

    html = _fragment(alice_client, q="cello").content.decode()

    shown, hidden = _shown_and_hidden(html)
    assert "2 relevant memories of 5" in shown
    assert all(text in shown for text in CELLO)
    assert not any(text in shown for text in UNRELATED)
    assert "Show 3 less relevant" in hidden
    assert all(text in hidden for text in UNRELATED)


def test_a_search_with_nothing_relevant_says_so_and_keeps_the_rest(
    memory_server, alice, alice_client
):
    for content in UNRELATED:
        _add(alice, content)

    html = _fragment(alice_client, q="cello").content.decode()

    shown, hidden = _shown_and_hidden(html)
    assert "0 relevant memories of 3" in shown
    assert "No memory is relevant to this search." in shown
    assert 'class="memory-card"' not in shown
    assert "Show 3 less relevant" in hidden
