"""The memory's htmx fragments: header indicator, sidebar search, detail modal, save button."""

import json
import re

from django.test import Client

from memory.client import services
from tests.fixtures.builders import make_conversation

XSS = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'


SKI_TRIP = ("We are planning a ski trip to Chamonix in February", "Great, Chamonix is lovely then")


def _conversation(user, title="Ski trip planning"):
    return make_conversation(user, title, *SKI_TRIP)


def test_it_loads_the_indicator_and_the_panel_on_the_chat_page(alice_client):
    page = alice_client.get("/").content.decode()

    assert 'id="memory-indicator"' in page
    assert (
        'hx-get="/memory/indicator?quick=1" hx-trigger="load, memory-state-changed from:body"'
    ) in page
    assert 'placeholder="Search my memories…"' in page
    assert 'hx-trigger="input changed delay:300ms, search"' in page
    for label in ("All", "Foundational", "Thematic", "Contextual"):
        assert f"> {label}</label>" in page


def test_it_shows_a_green_indicator_with_the_count_when_connected(
    memory_server, alice, alice_client
):
    services.add_thought(user=alice, content="Alice's first memory")

    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-connected" in html
    assert 'title="Memory active - 1 memory"' in html
    assert 'hx-trigger="every 30s"' in html
    assert '<dd class="memory-connection">connected</dd>' in html
    assert '<dd class="memory-total">1</dd>' in html
    assert "never" not in html  # there was a save: its time is shown


def test_it_shows_an_orange_indicator_when_the_server_is_down(no_memory_server, alice_client):

    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-disconnected" in html
    assert 'title="Memory unavailable"' in html
    assert '<dd class="memory-connection">unavailable</dd>' in html
    assert '<p class="memory-error small">Memory unavailable.</p>' in html
    assert "server.py" not in html and "MCP" not in html
    assert 'hx-trigger="every 5s"' in html  # keeps polling, more often: it may come back


def test_it_shows_a_grey_indicator_that_stops_polling_when_disabled(settings, alice_client):
    settings.MCP_MEMORY_ENABLED = False

    html = alice_client.get("/memory/indicator").content.decode()

    assert "status-disabled" in html
    assert 'title="Memory disabled"' in html
    assert "every 30s" not in html


def test_it_pulses_the_indicator_after_a_save(memory_server, alice_client):
    html = alice_client.get("/memory/indicator", {"pulse": "1"}).content.decode()

    assert "memory-indicator status-connected pulse" in html


def test_it_lists_search_results_with_score_excerpt_date_and_tags(
    memory_server, alice, alice_client
):
    services.add_thought(
        user=alice,
        content="Alice climbed Mont Blanc with her brother",
        context={"tags": ["climbing", "family"], "date": "2025-07-14T09:00:00+00:00"},
    )

    html = alice_client.get("/memory/search", {"q": "mountain climbing"}).content.decode()

    assert "Alice climbed Mont Blanc with her brother" in html
    assert "#climbing" in html and "#family" in html
    assert "14 Jul 2025" in html
    # The relevance on the /memory page's red-to-green scale.
    assert re.search(r'<span class="score score-\d+" title="Relevance">\d+%</span>', html)
    assert 'hx-get="/memory/m/' in html


def test_it_filters_the_panel_by_category(memory_server, alice, alice_client):
    services.add_thought(
        user=alice, content="Alice's core value is honesty", context={"category": "fondatrice"}
    )
    services.add_thought(
        user=alice,
        content="Alice valued honesty in Tuesday's chat",
        context={"category": "contextuelle"},
    )

    html = alice_client.get(
        "/memory/search", {"q": "honesty", "category": "fondatrice"}
    ).content.decode()

    assert "core value is honesty" in html
    assert "Tuesday" not in html


def test_it_shows_at_most_ten_results(memory_server, alice, alice_client):
    for n in range(12):
        services.add_thought(user=alice, content=f"Alice's garden note number {n}: tomatoes")

    html = alice_client.get("/memory/search", {"q": "garden tomatoes"}).content.decode()

    assert html.count('class="memory-result"') == 10


def test_it_lists_no_unrelated_memory_for_nonsense(memory_server, alice, alice_client):
    services.add_thought(user=alice, content="Alice's test drive of the electric van went well")
    services.add_thought(user=alice, content="Alice keeps bees on her allotment")

    for query in ("test test test test", "zxcv bnm", "the"):
        html = alice_client.get("/memory/search", {"q": query}).content.decode()

        # Nothing about the query: said so, and no "0%" match listed (the rest waits
        # behind "Show N less relevant").
        shown = html.partition('<details class="memory-less-relevant"')[0]
        assert 'class="memory-result"' not in shown
        assert "No memories match" in shown or "No memory is relevant to" in shown
        assert "0%" not in shown


def test_it_asks_for_a_query_before_searching(alice_client, no_memory_server):

    html = alice_client.get("/memory/search", {"q": "  "}).content.decode()

    assert "Type to search your memories." in html


def test_it_says_so_in_the_panel_when_the_server_is_down(alice_client, no_memory_server):

    response = alice_client.get("/memory/search", {"q": "anything"})

    assert response.status_code == 200  # htmx swaps it in
    assert "Memory unavailable" in response.content.decode()


def test_it_escapes_everything_a_memory_says(memory_server, alice, alice_client):
    saved = services.add_thought(user=alice, content=f"Alice pasted {XSS}", context={"tags": [XSS]})

    listing = alice_client.get("/memory/search", {"q": "Alice pasted"}).content.decode()
    modal = alice_client.get(f"/memory/m/{saved['id']}").content.decode()

    for html in (listing, modal):
        assert "<script>" not in html
        assert "<img src=x" not in html
        assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in html


def test_it_opens_the_detail_modal(memory_server, alice, alice_client):
    saved = services.add_thought(
        user=alice,
        content="Alice adopted a greyhound named Pixel",
        context={"category": "thematique", "tags": ["dogs"], "concepts": ["pets"]},
    )

    html = alice_client.get(f"/memory/m/{saved['id']}").content.decode()

    assert '<dialog class="memory-modal" open' in html
    assert "Alice adopted a greyhound named Pixel" in html
    assert '<span class="badge badge-thematique" title="In-depth discussions' in html
    assert ">Thematic</span>" in html
    assert "#dogs" in html and "pets" in html
    assert '<form method="dialog">' in html


def test_it_never_shows_bob_alices_memories_in_the_panels(memory_server, alice, bob_client):
    saved = services.add_thought(user=alice, content="Alice's secret recipe uses saffron")

    listing = bob_client.get("/memory/search", {"q": "secret recipe"}).content.decode()
    modal = bob_client.get(f"/memory/m/{saved['id']}")
    indicator = bob_client.get("/memory/indicator").content.decode()

    assert "saffron" not in listing
    assert "No memories match" in listing
    assert modal.status_code == 404
    assert "saffron" not in modal.content.decode()
    assert 'title="Memory active - 0 memories"' in indicator


def test_it_saves_the_whole_conversation_from_the_save_button(memory_server, alice, alice_client):
    conversation = _conversation(alice)
    answer = conversation.messages.filter(role="assistant").first()
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert f'hx-post="/memory/save/{conversation.pk}"' in page

    response = alice_client.post(
        f"/memory/save/{conversation.pk}",
        {"message_id": answer.pk, "category": "thematique", "tags": "ski, #travel"},
        HTTP_HX_REQUEST="true",
    )

    assert "Saved to memory" in response.content.decode()
    assert f'id="memory-save-{answer.pk}"' in response.content.decode()
    assert json.loads(response["HX-Trigger"])["memory-saved"]["conversation"] == conversation.pk
    conversation.refresh_from_db()
    assert conversation.has_memory_backup
    found = services.search_memories(user=alice, query="ski trip Chamonix")["results"][0]
    assert "We are planning a ski trip to Chamonix in February" in found["content"]
    assert "Great, Chamonix is lovely then" in found["content"]
    assert found["metadata"]["category"] == "thematique"
    assert found["metadata"]["tags"] == ["ski", "travel"]
    assert found["metadata"]["source"] == f"conversation:{conversation.pk}:{answer.pk}"
    # The page now says it is saved instead of offering the button again.
    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    assert "Saved" in page and "Save this conversation to memory" not in page


def test_it_refuses_to_save_someone_elses_conversation(memory_server, alice, bob_client):
    conversation = _conversation(alice)

    response = bob_client.post(f"/memory/save/{conversation.pk}", {"category": "thematique"})

    assert response.status_code == 404
    conversation.refresh_from_db()
    assert not conversation.has_memory_backup


def test_it_shows_the_save_error_in_the_form(alice, alice_client, no_memory_server):
    conversation = _conversation(alice)

    bad_category = alice_client.post(f"/memory/save/{conversation.pk}", {"category": "poetry"})
    server_down = alice_client.post(f"/memory/save/{conversation.pk}", {"category": "thematique"})

    assert "Not saved: category must be one of" in bad_category.content.decode()
    assert "Not saved: memory unavailable." in server_down.content.decode()
    assert "HX-Trigger" not in server_down
    conversation.refresh_from_db()
    assert not conversation.has_memory_backup


def test_it_requires_the_csrf_token_to_save(alice):
    conversation = _conversation(alice)
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    assert (
        client.post(f"/memory/save/{conversation.pk}", {"category": "thematique"}).status_code
        == 403
    )


def test_it_sends_anonymous_visitors_to_the_login_page(client, db):
    for url in ("/memory/indicator", "/memory/search?q=x", "/memory/m/abc"):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


def test_it_offers_no_memory_widgets_when_memory_is_disabled(settings, alice, alice_client):
    settings.MCP_MEMORY_ENABLED = False
    conversation = _conversation(alice)

    page = alice_client.get(f"/c/{conversation.pk}/").content.decode()
    search = alice_client.get("/memory/search", {"q": "ski"}).content.decode()

    assert "Memory is disabled on this server." in page
    assert 'placeholder="Search my memories…"' not in page
    assert "memory-save-button" not in page
    assert "Memory is disabled on this server" in search


def test_the_panel_counts_the_relevant_results_and_keeps_the_rest_on_request(
    memory_server, alice, alice_client
):
    kayak = "Alice paddles a red sea kayak on Sundays"
    others = ["The quarterly report is due Friday", "Alice keeps bees on her allotment"]
    for content in (kayak, *others):
        services.add_thought(user=alice, content=content)

    html = alice_client.get("/memory/search", {"q": "kayak"}).content.decode()

    shown, _, hidden = html.partition('<details class="memory-less-relevant"')
    assert "1 relevant memory of 3" in shown
    assert kayak in shown
    assert not any(text in shown for text in others)
    assert "Show 2 less relevant" in hidden
    assert all(text in hidden for text in others)
