"""The /api/memory/ JSON endpoints, through the real ikario_rag subprocess."""

import json

import pytest
from django.test import Client

from memory.client import services


def _post(client, url, data=None, *, raw=None):
    body = raw if raw is not None else json.dumps(data or {})
    return client.post(url, body, content_type="application/json")


def _save(client, content, **context):
    response = _post(client, "/api/memory/add", {"content": content, "context": context})
    assert response.status_code == 201, response.content
    return response.json()


def test_it_adds_then_finds_a_memory_by_post_and_get(memory_server, alice_client):
    saved = _save(alice_client, "Alice learns the cello on Sundays", category="thematique")
    assert saved["message"] == "Memory saved"

    by_post = _post(alice_client, "/api/memory/search", {"query": "cello", "n_results": 3})
    by_get = alice_client.get("/api/memory/search", {"q": "cello", "category": "thematique"})

    for response in (by_post, by_get):
        assert response.status_code == 200
        first = response.json()["results"][0]
        assert first["id"] == saved["id"]
        assert first["content"] == "Alice learns the cello on Sundays"
        assert first["metadata"]["category"] == "thematique"
        assert {"relevance_score", "distance"} <= first.keys()


def test_it_says_already_in_memory_for_the_same_thought_twice(memory_server, alice_client):
    _save(alice_client, "Alice was born in Lyon")

    again = _post(alice_client, "/api/memory/add", {"content": "Alice was born in Lyon"})

    assert again.status_code == 200
    assert again.json()["status"] == "duplicate"
    assert again.json()["message"] == "Already in memory"


def test_it_traces_evolution_and_checks_consistency(memory_server, alice_client):
    _save(alice_client, "Alice prefers tea", concepts=["tea"], date="2024-01-01")
    _save(alice_client, "Alice switched from tea to coffee", concepts=["tea"], date="2025-01-01")

    timeline = _post(alice_client, "/api/memory/evolution", {"concept": "tea", "limit": 5})
    consistency = _post(alice_client, "/api/memory/consistency", {"statement": "Alice drinks tea"})

    assert timeline.status_code == 200
    assert [e["content"] for e in timeline.json()["timeline"]] == [
        "Alice prefers tea",
        "Alice switched from tea to coffee",
    ]
    assert consistency.status_code == 200
    assert 0 <= consistency.json()["consistency_score"] <= 1
    assert "contradictions" in consistency.json()


def test_it_reports_stats(memory_server, alice_client):
    _save(alice_client, "Alice's cat is called Miso")

    stats = alice_client.get("/api/memory/stats").json()

    assert stats["connected"] is True
    assert stats["total_memories"] == 1
    assert stats["last_save"]


def test_it_gets_deletes_and_forgets(memory_server, alice_client):
    saved = _save(alice_client, "Alice's flight to Lisbon leaves at 7")
    other = _save(alice_client, "Alice plays chess online")

    got = alice_client.get(f"/api/memory/{saved['id']}")
    assert got.status_code == 200
    assert got.json()["content"] == "Alice's flight to Lisbon leaves at 7"

    deleted = alice_client.delete(f"/api/memory/{saved['id']}")
    assert deleted.json() == {"deleted": True, "id": saved["id"]}
    assert alice_client.get(f"/api/memory/{saved['id']}").status_code == 404
    assert alice_client.delete(f"/api/memory/{saved['id']}").status_code == 404

    dry = _post(alice_client, "/api/memory/forget", {"topic": "chess", "dry_run": True})
    assert [m["id"] for m in dry.json()["removed"]] == [other["id"]]
    assert alice_client.get(f"/api/memory/{other['id']}").status_code == 200
    gone = _post(alice_client, "/api/memory/forget", {"topic": "chess"})
    assert gone.json()["count"] == 1
    assert alice_client.get(f"/api/memory/{other['id']}").status_code == 404


def test_it_lists_recent_memories(memory_server, alice_client):
    first = _save(alice_client, "Alice bought a bicycle")
    second = _save(alice_client, "Alice repaired the bicycle")

    recent = alice_client.get("/api/memory/recent", {"limit": 5}).json()["memories"]

    assert [m["id"] for m in recent] == [second["id"], first["id"]]


def test_it_never_shows_bob_alices_memories(memory_server, alice_client, bob_client, alice):
    saved = _save(alice_client, "Alice's passport number ends in 7734", tags=["passport"])

    assert bob_client.get("/api/memory/search", {"q": "passport number"}).json()["results"] == []
    assert _post(bob_client, "/api/memory/search", {"query": "passport"}).json()["results"] == []
    assert bob_client.get(f"/api/memory/{saved['id']}").status_code == 404
    assert bob_client.delete(f"/api/memory/{saved['id']}").status_code == 404
    assert bob_client.get("/api/memory/recent").json()["memories"] == []
    assert bob_client.get("/api/memory/stats").json()["total_memories"] == 0
    assert _post(bob_client, "/api/memory/evolution", {"concept": "passport"}).json() == {
        "timeline": []
    }
    consistency = _post(bob_client, "/api/memory/consistency", {"statement": "passport 7734"})
    assert consistency.json()["supporting"] == consistency.json()["contradictions"] == []
    forgot = _post(bob_client, "/api/memory/forget", {"topic": "passport", "min_score": 0.0})
    assert forgot.json()["removed"] == []
    # Still Alice's, untouched.
    assert services.get_memory(user=alice, memory_id=saved["id"])["id"] == saved["id"]


@pytest.mark.parametrize(
    ("method", "url", "body", "field"),
    [
        ("post", "/api/memory/search", {}, "query"),
        ("post", "/api/memory/search", {"query": 12}, "query"),
        ("post", "/api/memory/search", {"query": "x", "n_results": "ten"}, "n_results"),
        ("post", "/api/memory/search", {"query": "x", "n_results": 500}, "n_results"),
        # NaN and Infinity are not JSON: the one parser refuses them (chat/edge.py).
        ("post", "/api/memory/search", {"query": "x", "n_results": float("nan")}, "body"),
        ("post", "/api/memory/forget", {"topic": "x", "min_score": float("inf")}, "body"),
        ("post", "/api/memory/search", {"query": "x" * 5000}, "query"),
        ("post", "/api/memory/search", {"query": "x", "filter_category": 3}, "filter_category"),
        ("get", "/api/memory/search?q=", None, "query"),
        ("get", "/api/memory/search?q=x&n=abc", None, "n_results"),
        ("get", "/api/memory/search?q=x&category=nope", None, "filter_category"),
        ("post", "/api/memory/add", {}, "content"),
        ("post", "/api/memory/add", {"content": ""}, "content"),
        ("post", "/api/memory/add", {"content": "x", "context": "fondatrice"}, "context"),
        ("post", "/api/memory/add", {"content": "x", "context": {"tags": [1]}}, "context.tags"),
        ("post", "/api/memory/evolution", {"concept": "x", "limit": 0}, "limit"),
        ("post", "/api/memory/evolution", {}, "concept"),
        ("post", "/api/memory/consistency", {"statement": None}, "statement"),
        ("post", "/api/memory/forget", {"topic": "x", "min_score": "high"}, "min_score"),
        ("post", "/api/memory/forget", {"topic": "x", "dry_run": 1}, "dry_run"),
        ("get", "/api/memory/recent?limit=0", None, "limit"),
        ("get", "/api/memory/recent?limit=lots", None, "limit"),
        ("get", "/api/memory/bad$id", None, "memory_id"),
    ],
)
def test_it_answers_400_naming_the_field(alice_client, no_memory_server, method, url, body, field):
    # Validation happens before any call: no server needed, none reached.
    response = _post(alice_client, url, body) if method == "post" else alice_client.get(url)

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert field.split(".")[-1] in response.json()["error"]["reason"]


@pytest.mark.parametrize("raw", ["{not json", "[1, 2]", '"text"', "\xff\xfe", "[" * 100_000])
def test_it_answers_400_for_a_body_that_is_not_a_json_object(alice_client, raw):
    response = _post(alice_client, "/api/memory/add", raw=raw)

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "body"


SURROGATE = '"\\ud800"'  # the JSON escape of a lone surrogate, as a client sends it


@pytest.mark.parametrize(
    ("url", "raw", "field", "reason"),
    [
        ("/api/memory/search", '{"query": ' + SURROGATE + "}", "query", "cannot be stored"),
        ("/api/memory/add", '{"content": "a\\u0000b"}', "content", "cannot be stored"),
        (
            "/api/memory/add",
            '{"content": "x", "context": {"tags": [' + SURROGATE + "]}}",
            "context.tags",
            "cannot be stored",
        ),
        (
            "/api/memory/consistency",
            '{"statement": ' + SURROGATE + "}",
            "statement",
            "cannot be stored",
        ),
        ("/api/memory/evolution", '{"concept": "x", "limit": 1e999}', "body", "finite"),
        ("/api/memory/forget", '{"topic": "x", "min_score": NaN}', "body", "finite"),
        (
            "/api/memory/search",
            '{"query": "x", "n_results": ' + "9" * 40 + "}",
            "body",
            "longer than 19 digits",
        ),
        (
            "/api/memory/search",
            '{"query": "x", "n_results": 5.0}',
            "n_results",
            "must be an integer",
        ),
        ("/api/memory/add", '{"content": "' + "x" * 100_000 + '"}', "content", "at most"),
        (
            "/api/memory/add",
            '{"content": "x", "context": {"' + "k" * 100_000 + '": 1}}',
            "context." + "k" * 39 + "…",
            "not a known context field",
        ),
        ("/api/memory/search", '{"query": "x",}', "body", "is not valid JSON"),
        ("/api/memory/search", '{"q":' * 40 + "1" + "}" * 40, "body", "nested deeper"),
    ],
)
def test_it_refuses_hostile_input_before_calling_the_server(
    alice_client, no_memory_server, url, raw, field, reason
):
    response = _post(alice_client, url, raw=raw)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["field"] == field
    assert reason in response.json()["error"]["reason"]


@pytest.mark.parametrize("query", ["n=" + "9" * 20, "n=1.5", "n=-1", "n=%EF%BC%91"])
def test_it_refuses_integer_parameters_that_are_not_counts(alice_client, no_memory_server, query):
    response = alice_client.get(f"/api/memory/search?q=x&{query}")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == "n_results"


def test_it_refuses_anonymous_callers(client, db):
    assert client.get("/api/memory/stats").status_code == 401
    assert client.get("/api/memory/search?q=x").status_code == 401
    assert _post(client, "/api/memory/add", {"content": "x"}).status_code == 401
    assert client.delete("/api/memory/abc").status_code == 401


def test_it_requires_the_csrf_token(alice):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = _post(client, "/api/memory/add", {"content": "sneaky"})

    assert response.status_code == 403


def test_it_refuses_other_methods(alice_client):
    response = alice_client.put("/api/memory/search")

    assert response.status_code == 405
    assert response["Allow"] == "GET, POST"


def test_it_answers_503_with_a_retry_hint_when_the_server_cannot_start(
    alice_client, no_memory_server, caplog
):

    response = alice_client.get("/api/memory/search", {"q": "anything"})

    assert response.status_code == 503
    assert int(response["Retry-After"]) >= 1
    assert response.json()["error"]["reason"] == "memory unavailable"
    stats = alice_client.get("/api/memory/stats")
    assert stats.status_code == 200
    assert stats.json()["connected"] is False
    assert stats.json()["status"] == "disconnected"


def test_it_answers_503_when_memory_is_disabled(alice_client, settings):
    settings.MCP_MEMORY_ENABLED = False

    response = _post(alice_client, "/api/memory/search", {"query": "x"})

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "disabled"
    assert alice_client.get("/api/memory/stats").json()["status"] == "disabled"


def test_it_takes_the_content_limit_from_the_one_contract(memory_server, alice_client, alice):
    # The web app, the tool and the server once had three limits: they are one now, so a
    # memory exactly at the limit goes through every layer and one more character is
    # refused by the first, naming the field and the same limit.
    from ikario_rag import contract

    words = " ".join(f"limit{i}" for i in range(contract.MAX_CONTENT // 8))
    at_limit = words[: contract.MAX_CONTENT].rstrip()
    at_limit += "z" * (contract.MAX_CONTENT - len(at_limit))

    saved = _save(alice_client, at_limit)
    over = _post(alice_client, "/api/memory/add", {"content": at_limit + "z"})

    assert services.get_memory(user=alice, memory_id=saved["id"])["content"] == at_limit
    assert over.status_code == 400
    assert over.json()["error"]["field"] == "content"
    assert f"{contract.MAX_CONTENT}" in over.json()["error"]["reason"].replace(",", "")


@pytest.mark.parametrize("mode", ["text", "hybrid"])
def test_it_gives_bob_the_same_scores_whatever_alice_adds(
    memory_server, alice, bob, bob_client, mode
):
    # Scores from term statistics over everybody's memories would tell Bob whether a word
    # is in Alice's: his must not move when she writes 40 memories full of his words.
    for content in ("Bob grows tomatoes in Lisbon", "Bob's tomatoes need water in August"):
        services.add_thought(user=bob, content=content)

    def bobs_results():
        body = {"query": "tomatoes Lisbon", "mode": mode}
        response = _post(bob_client, "/api/memory/search", body)
        assert response.status_code == 200 and response.json()["mode_used"] == mode
        return [(r["id"], r["relevance_score"]) for r in response.json()["results"]]

    before = bobs_results()
    services.add_thoughts(
        user=alice,
        items=[{"content": f"Alice saw tomatoes {i} times in Lisbon"} for i in range(40)],
    )
    after = bobs_results()

    assert len(before) == 2 and after == before
