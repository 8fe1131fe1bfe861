"""The memory API's settings, retrieval log and facts: /api/memory/settings, /retrievals,
/facts, GET /search's filters and TTL durations, through the real ikario_rag subprocess where
memories are read."""

import json

import pytest
from django.test import Client

from chat.models import Conversation
from ikario_rag import contract
from memory.client import services
from memory.models import MemoryRetrieval, MemorySettings

SURROGATE = '"\\ud800"'  # the JSON escape of a lone surrogate, as a client sends it


def _send(client, method, url, data=None, *, raw=None, **headers):
    if method == "get":
        return client.get(url, **headers)
    body = raw if raw is not None else json.dumps(data if data is not None else {})
    return getattr(client, method)(url, body, content_type="application/json", **headers)


def _fact(client, content, **fields):
    response = _send(client, "post", "/api/memory/facts", {"content": content, **fields})
    assert response.status_code == 201, response.content
    return response.json()


# --- settings ------------------------------------------------------------------------------


def test_settings_are_read_and_changed_field_by_field(alice_client, alice):
    got = alice_client.get("/api/memory/settings")

    assert got.status_code == 200
    assert got.json() == {
        "enabled": True,
        "paused": False,
        "auto_recall": True,
        "autosave": True,
        "max_results": 4,
        "min_score": 0.5,
        "reference_past_chats": True,
    }

    changed = _send(
        alice_client,
        "patch",
        "/api/memory/settings",
        {"max_results": 7, "min_score": 0.3, "auto_recall": False, "paused": True},
    )

    assert changed.status_code == 200
    assert changed.json()["max_results"] == 7
    stored = MemorySettings.for_user(alice)
    assert (stored.max_results, stored.min_score, stored.auto_retrieve, stored.paused) == (
        7,
        0.3,
        False,
        True,
    )


def test_memory_turned_off_is_turned_back_on_through_the_settings(alice_client, alice):
    assert (
        _send(alice_client, "patch", "/api/memory/settings", {"enabled": False}).status_code == 200
    )
    assert alice_client.get("/api/memory/retrievals").status_code == 409

    back = _send(alice_client, "patch", "/api/memory/settings", {"enabled": True})

    assert back.status_code == 200
    assert MemorySettings.for_user(alice).memory_enabled is True


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_results": 11}, "max_results"),
        ({"max_results": 0}, "max_results"),
        ({"max_results": 5.0}, "max_results"),
        ({"max_results": True}, "max_results"),
        ({"max_results": "5"}, "max_results"),
        ({"min_score": 1.5}, "min_score"),
        ({"min_score": "high"}, "min_score"),
        ({"paused": "yes"}, "paused"),
        ({"enabled": 1}, "enabled"),
        ({"colour": "blue"}, "colour"),
        ({"k" * 5000: 1}, "k" * 39 + "…"),
    ],
)
def test_a_settings_patch_names_the_bad_field_and_changes_nothing(alice_client, alice, body, field):
    response = _send(alice_client, "patch", "/api/memory/settings", {"autosave": False, **body})

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field
    assert MemorySettings.for_user(alice).autosave is True  # the good field was not saved either


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ('{"max_results": ' + "9" * 40 + "}", "body", "longer than 19 digits"),
        ('{"min_score": NaN}', "body", "finite"),
        ('{"min_score": 1e999}', "body", "finite"),
        ('{"a":' * 40 + "1" + "}" * 40, "body", "nested deeper"),
        ('{"' + "\\ud800" + '": true}', "\ufffd", "is not a setting"),
        ('{"max_results": ' + SURROGATE + "}", "max_results", "integer"),
        ('{"paused": "\\u0000"}', "paused", "true or false"),
        ("[1]", "body", ""),
    ],
)
def test_a_hostile_settings_patch_is_a_400_never_a_crash(alice_client, raw, field, reason):
    response = _send(alice_client, "patch", "/api/memory/settings", raw=raw)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["field"] == field
    assert reason in response.json()["error"]["reason"]


def test_a_settings_patch_is_idempotent(alice_client, alice):
    first = _send(
        alice_client, "patch", "/api/memory/settings", {"max_results": 9}, HTTP_IDEMPOTENCY_KEY="k1"
    )
    MemorySettings.objects.filter(user=alice).update(max_results=2)

    again = _send(
        alice_client, "patch", "/api/memory/settings", {"max_results": 9}, HTTP_IDEMPOTENCY_KEY="k1"
    )

    assert again.json() == first.json()
    assert again["Idempotent-Replayed"] == "true"
    assert MemorySettings.for_user(alice).max_results == 2  # not run twice


# --- the retrieval log -----------------------------------------------------------------------


def _retrievals(user, n):
    conversation = Conversation.objects.create(user=user, title="log")
    return [
        MemoryRetrieval.objects.create(
            user=user, conversation=conversation, query=f"q{i}", memories=[{"id": f"m{i}"}]
        )
        for i in range(n)
    ]


def test_the_retrieval_log_is_paged_newest_first(alice_client, alice, bob):
    rows = _retrievals(alice, 5)
    _retrievals(bob, 2)

    first = alice_client.get("/api/memory/retrievals", {"limit": 2}).json()
    last = alice_client.get("/api/memory/retrievals", {"limit": 2, "page": 3}).json()

    assert [r["query"] for r in first["retrievals"]] == ["q4", "q3"]
    assert (first["total"], first["has_more"]) == (5, True)
    assert first["retrievals"][0]["memories"] == [{"id": "m4"}]
    assert first["retrievals"][0]["conversation_id"] == rows[0].conversation_id
    assert [r["query"] for r in last["retrievals"]] == ["q0"]
    assert last["has_more"] is False


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("page=0", "page"),
        ("page=" + "9" * 30, "page"),
        ("page=x", "page"),
        ("limit=101", "limit"),
        ("limit=-1", "limit"),
    ],
)
def test_the_retrieval_log_names_a_bad_parameter(alice_client, query, field):
    response = alice_client.get(f"/api/memory/retrievals?{query}")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


# --- logged out, CSRF, methods ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "url"),
    [
        ("get", "/api/memory/settings"),
        ("patch", "/api/memory/settings"),
        ("get", "/api/memory/retrievals"),
        ("get", "/api/memory/facts"),
        ("post", "/api/memory/facts"),
        ("delete", "/api/memory/facts/abc"),
    ],
)
def test_the_new_endpoints_refuse_anonymous_callers(client, db, method, url):
    response = _send(client, method, url, {"max_results": 3, "content": "x"})

    assert response.status_code == 401
    assert "error" in response.json()


@pytest.mark.parametrize(
    ("method", "url"),
    [("patch", "/api/memory/settings"), ("post", "/api/memory/facts")],
)
def test_the_new_writes_require_the_csrf_token(alice, method, url):
    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)

    response = _send(client, method, url, {"max_results": 3, "content": "sneaky"})

    assert response.status_code == 403
    assert MemorySettings.for_user(alice).max_results == 4


def test_the_new_endpoints_refuse_other_methods(alice_client):
    assert alice_client.post("/api/memory/settings").status_code == 405
    assert alice_client.delete("/api/memory/retrievals").status_code == 405
    assert _send(alice_client, "put", "/api/memory/facts").status_code == 405


# --- facts -----------------------------------------------------------------------------------


def test_a_fact_is_added_listed_filtered_and_deleted(memory_server, alice_client, alice):
    ski = _fact(alice_client, "Alice skis in Tignes every February", tags=["ski"], ttl="2w")
    cello = _fact(alice_client, "Alice plays the cello", kind="preference", category="thematique")

    everything = alice_client.get("/api/memory/facts").json()
    assert [f["id"] for f in everything["facts"]] == [cello["id"], ski["id"]]
    assert everything["total"] == 2
    assert everything["facts"][1]["metadata"]["kind"] == "fact"  # the default kind
    assert everything["facts"][1]["metadata"]["expires_at"]  # the 2w lifetime was kept

    by_kind = alice_client.get("/api/memory/facts", {"kinds": "preference"}).json()
    by_tag = alice_client.get("/api/memory/facts", {"tag": "ski"}).json()
    by_category = alice_client.get("/api/memory/facts", {"category": "thematique"}).json()
    by_text = alice_client.get("/api/memory/facts", {"q": "Tignes"}).json()
    paged = alice_client.get("/api/memory/facts", {"limit": 1, "page": 2}).json()
    assert [f["id"] for f in by_kind["facts"]] == [cello["id"]]
    assert [f["id"] for f in by_tag["facts"]] == [ski["id"]]
    assert [f["id"] for f in by_category["facts"]] == [cello["id"]]
    assert [f["id"] for f in by_text["facts"]] == [ski["id"]]
    assert ([f["id"] for f in paged["facts"]], paged["has_more"]) == ([ski["id"]], False)

    gone = alice_client.delete(f"/api/memory/facts/{ski['id']}")
    assert gone.status_code == 200
    assert gone.json() == {"deleted": True, "id": ski["id"]}
    assert [f["id"] for f in alice_client.get("/api/memory/facts").json()["facts"]] == [cello["id"]]


def test_bob_can_neither_see_nor_delete_alices_facts(
    memory_server, alice_client, bob_client, alice
):
    saved = _fact(alice_client, "Alice's locker code is 4412")

    assert bob_client.get("/api/memory/facts").json()["facts"] == []
    assert bob_client.get("/api/memory/facts", {"q": "locker"}).json()["facts"] == []
    assert bob_client.get(f"/api/memory/facts/{saved['id']}").status_code == 404
    assert bob_client.delete(f"/api/memory/facts/{saved['id']}").status_code == 404
    assert services.get_memory(user=alice, memory_id=saved["id"])["id"] == saved["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "a\u0000b"}, "content"),
        ({"content": "x", "kind": "rumour"}, "kind"),
        ({"content": "x", "category": "nope"}, "category"),
        ({"content": "x", "tags": "ski"}, "tags"),
        ({"content": "x", "tags": ["x" * 500]}, "tags"),
        ({"content": "x", "ttl": "forever"}, "ttl"),
        ({"content": "x", "ttl": "0d"}, "ttl"),
        ({"content": "x", "ttl": "-1d"}, "ttl"),
        ({"content": "x", "ttl": "1.5d"}, "ttl"),
        ({"content": "x", "ttl": 86400}, "ttl"),
        ({"content": "x", "date": "yesterday"}, "date"),
        ({"content": "x", "colour": "blue"}, "colour"),
        ({"content": "x" * (contract.MAX_CONTENT + 1)}, "content"),
    ],
)
def test_adding_a_fact_names_the_bad_field(alice_client, no_memory_server, body, field):
    response = _send(alice_client, "post", "/api/memory/facts", body)

    assert response.status_code == 400, response.content[:300]
    assert response.json()["error"]["field"] == field


def test_adding_a_fact_refuses_hostile_json(alice_client, no_memory_server):
    surrogate = _send(
        alice_client, "post", "/api/memory/facts", raw='{"content": ' + SURROGATE + "}"
    )
    deep = _send(alice_client, "post", "/api/memory/facts", raw='{"c":' * 40 + "1" + "}" * 40)
    tag = _send(
        alice_client,
        "post",
        "/api/memory/facts",
        raw='{"content": "x", "tags": [' + SURROGATE + "]}",
    )

    assert (surrogate.status_code, surrogate.json()["error"]["field"]) == (400, "content")
    assert (deep.status_code, deep.json()["error"]["field"]) == (400, "body")
    assert (tag.status_code, tag.json()["error"]["field"]) == (400, "tags")


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("kinds=rumour", "kinds"),
        ("kind=rumour", "kinds"),
        ("tags=" + "x" * 300, "tags"),
        ("q=a%00b", "q"),
        ("page=0", "page"),
        ("limit=" + "9" * 25, "limit"),
    ],
)
def test_listing_facts_names_a_bad_parameter(alice_client, no_memory_server, query, field):
    response = alice_client.get(f"/api/memory/facts?{query}")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


def test_adding_a_fact_is_idempotent(memory_server, alice_client):
    body = {"content": "Alice's dentist is Dr Martin", "kind": "fact"}
    first = _send(alice_client, "post", "/api/memory/facts", body, HTTP_IDEMPOTENCY_KEY="f1")
    again = _send(alice_client, "post", "/api/memory/facts", body, HTTP_IDEMPOTENCY_KEY="f1")

    assert first.status_code == again.status_code == 201
    assert again["Idempotent-Replayed"] == "true"
    assert alice_client.get("/api/memory/facts").json()["total"] == 1


# --- GET search: the same filters as POST ----------------------------------------------------


def test_get_search_honours_mode_kinds_and_tags_as_post_does(memory_server, alice_client):
    ski = _fact(alice_client, "Alice goes skiing in the Alps", tags=["winter"])
    _fact(alice_client, "Alice went skiing once in Andorra", kind="observation")

    cases = [
        ({"kinds": ["fact"]}, {"kinds": "fact"}),
        ({"tags": ["winter"]}, {"tag": "winter"}),
        ({"kinds": ["fact"], "mode": "text"}, {"kind": "fact", "mode": "text"}),
    ]
    for body, query in cases:
        by_post = _send(
            alice_client, "post", "/api/memory/search", {"query": "skiing", **body}
        ).json()
        by_get = alice_client.get("/api/memory/search", {"q": "skiing", **query}).json()
        assert [r["id"] for r in by_get["results"]] == [ski["id"]], query
        assert [r["id"] for r in by_get["results"]] == [r["id"] for r in by_post["results"]]
        assert by_get["mode_used"] == by_post["mode_used"]
    text_only = alice_client.get("/api/memory/search", {"q": "skiing", "mode": "text"}).json()
    assert text_only["mode_used"] == "text"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("q=x&mode=psychic", "mode"),
        ("q=x&kinds=rumour", "kinds"),
        ("q=x&tags=" + "t" * 300, "tags"),
    ],
)
def test_get_search_names_a_bad_filter(alice_client, no_memory_server, query, field):
    response = alice_client.get(f"/api/memory/search?{query}")

    assert response.status_code == 400
    assert response.json()["error"]["field"] == field


# --- TTL durations ---------------------------------------------------------------------------


@pytest.mark.parametrize("ttl", ["1d", "2w", "3h", "30m", " 7 D "])
def test_any_duration_the_server_accepts_is_a_ttl(memory_server, alice_client, ttl):
    response = _send(
        alice_client,
        "post",
        "/api/memory/add",
        {"content": f"Alice is in Rome for {ttl}", "context": {"ttl": ttl}},
    )

    assert response.status_code == 201, response.content


@pytest.mark.parametrize("ttl", ["1d", "2w", "3h", "30m", "99999w", " 7 D "])
def test_the_app_and_the_server_share_one_ttl_rule(ttl):
    from ikario_rag import text

    assert text.parse_ttl(ttl).total_seconds() == contract.ttl_seconds(ttl)


@pytest.mark.parametrize(
    "ttl", ["", "d", "0d", "1y", "1.5d", "-1d", "+1d", "100000w", "١d", "7 jours"]
)
def test_a_duration_neither_accepts_is_refused_by_both(ttl):
    from ikario_rag import text
    from memory.client import validation
    from memory.client.errors import MemoryInputError

    with pytest.raises(ValueError):
        text.parse_ttl(ttl)
    with pytest.raises(MemoryInputError) as refused:
        validation.ttl("context.ttl", ttl)
    assert refused.value.field == "context.ttl"
