"""Claude's memory tools' filters over the real memory server: expiry, kind, subject,
self/goal sub-categories, and auto-recall's recency window with its explicit override."""

import json
from datetime import UTC, datetime, timedelta

import pytest
from asgiref.sync import async_to_sync

from memory.client import services
from memory.recall import recency, retrieval, tools
from tests.fixtures.builders import make_conversation
from tests.fixtures.memory_server import wait_indexed

pytestmark = pytest.mark.django_db


def run_tool(user, conversation, name, data):
    return async_to_sync(tools.run_tool)(user, conversation, name, data)


def found(outcome) -> list[dict]:
    assert outcome.is_error is False, outcome.content
    return json.loads(outcome.content)["results"]


@pytest.fixture
def chat(alice):
    return make_conversation(alice, "Tools")


def _moment(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00"))


def test_save_memory_sets_an_expiry_by_the_servers_rule(memory_server, alice, chat):
    saved = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "Alice has a cold this week", "category": "contextuelle", "ttl": "2w"},
    )
    assert saved.is_error is False, saved.content
    memory_id = json.loads(saved.content)["id"]

    (record,) = services.get_memories(user=alice, ids=[memory_id])["memories"]
    meta = record["metadata"]
    lifetime = _moment(meta["expires_at"]) - _moment(meta["created_at"])
    assert abs(lifetime - timedelta(weeks=2)) <= timedelta(seconds=2)
    one_day = run_tool(
        alice,
        chat,
        "save_memory",
        {
            "content": "Alice is in Lyon today",
            "category": "contextuelle",
            "ttl": "1d",
            "kind": "thought",
        },
    )
    assert one_day.is_error is False, one_day.content

    refused = run_tool(
        alice, chat, "save_memory", {"content": "x y z", "category": "contextuelle", "ttl": "2y"}
    )
    assert refused.is_error is True
    assert "ttl must be a duration like" in refused.content


def test_an_expired_memory_is_not_found(memory_server, alice, chat):
    soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
    services.restore_memories(
        user=alice,
        memories=[
            {"content": "Alice's flight leaves from gate B12", "metadata": {"expires_at": soon}}
        ],
    )
    import time

    time.sleep(1.5)
    results = found(run_tool(alice, chat, "search_memories", {"query": "flight gate B12"}))
    assert "Alice's flight leaves from gate B12" not in [r["content"] for r in results]


def test_search_memories_filters_by_kind_and_subject(memory_server, alice, chat):
    for content, kind, subjects in [
        ("Mickaël broke his shoulder skiing", "fact", ["Mickaël"]),
        ("Mickael's birthday party is in May", "thought", None),
        ("Léa plays the piano every evening", "fact", ["Léa"]),
        ("Skiing in Chamonix was cold", "thought", None),
    ]:
        saved = run_tool(
            alice,
            chat,
            "save_memory",
            {"content": content, "category": "contextuelle", "kind": kind, "subjects": subjects},
        )
        assert saved.is_error is False, saved.content
    wait_indexed()

    about = found(run_tool(alice, chat, "search_memories", {"query": "", "subject": "Mickaël"}))
    assert sorted(r["content"] for r in about) == [
        "Mickael's birthday party is in May",  # named in its text, accents aside
        "Mickaël broke his shoulder skiing",  # labelled so
    ]
    facts = found(
        run_tool(
            alice,
            chat,
            "search_memories",
            {"query": "skiing", "subject": "Mickaël", "kinds": ["fact"]},
        )
    )
    assert [(r["content"], r["kind"], r["subjects"]) for r in facts] == [
        ("Mickaël broke his shoulder skiing", "fact", ["Mickaël"])
    ]
    bad = run_tool(alice, chat, "search_memories", {"query": "ski", "kinds": ["diary"]})
    assert bad.is_error is True and "kinds" in bad.content


def test_self_and_goal_memories_carry_a_searchable_subcategory(memory_server, alice, chat):
    for content, kind, sub in [
        ("I cannot browse the web", "self", "limitation"),
        ("I can read what the user saves to memory", "self", "capability"),
        ("I want to learn to search the web", "goal", "long_term"),
    ]:
        saved = run_tool(
            alice,
            chat,
            "save_memory",
            {"content": content, "category": "fondatrice", "kind": kind, "subcategory": sub},
        )
        assert saved.is_error is False, saved.content
    wait_indexed()

    limits = found(
        run_tool(
            alice, chat, "search_memories", {"query": "my limitations", "subcategory": "limitation"}
        )
    )
    assert [(r["content"], r["subcategory"]) for r in limits] == [
        ("I cannot browse the web", "limitation")
    ]
    goals = found(
        run_tool(alice, chat, "search_memories", {"query": "web", "subcategory": "long_term"})
    )
    assert [r["content"] for r in goals] == ["I want to learn to search the web"]

    wrong = run_tool(
        alice,
        chat,
        "save_memory",
        {"content": "x y", "category": "fondatrice", "kind": "goal", "subcategory": "limitation"},
    )
    assert wrong.is_error is True
    assert "subcategory is for kind self (capability" in wrong.content


def test_recall_keeps_to_its_window_unless_asked(memory_server, alice, chat, settings):
    settings.MEMORY_RECALL_WINDOW_DAYS = 90
    long_ago = (datetime.now(UTC) - timedelta(days=200)).isoformat()
    lately = (datetime.now(UTC) - timedelta(days=10)).isoformat()

    def save(content, kind, date):
        services.add_thought(
            user=alice, content=content, context={"kind": kind, "date": date, "dedup": False}
        )

    save("We chose the chalet in Chamonix for the winter holidays", "conversation", long_ago)
    save("We booked the Chamonix chalet cleaning for Friday", "conversation", lately)
    wait_indexed()

    def recalled(query):
        memories = async_to_sync(retrieval.search_for_turn)(
            user=alice, query=query, max_results=10, min_score=0.0
        )
        return {m["content"] for m in memories}

    automatic = recalled("the Chamonix chalet")
    assert "We chose the chalet in Chamonix for the winter holidays" not in automatic
    assert "We booked the Chamonix chalet cleaning for Friday" in automatic
    # A message naming a time lifts the window; so does an explicit search.
    assert "We chose the chalet in Chamonix for the winter holidays" in recalled(
        "What did we say about the Chamonix chalet last year?"
    )
    explicit = found(run_tool(alice, chat, "search_memories", {"query": "the Chamonix chalet"}))
    assert "We chose the chalet in Chamonix for the winter holidays" in [
        r["content"] for r in explicit
    ]
    settings.MEMORY_RECALL_WINDOW_DAYS = 0
    assert "We chose the chalet in Chamonix for the winter holidays" in recalled(
        "the Chamonix chalet"
    )

    # A fact stays whatever its age (and, knowledge first, answers before the transcripts).
    settings.MEMORY_RECALL_WINDOW_DAYS = 90
    save("Alice's chalet in Chamonix has three bedrooms", "fact", long_ago)
    wait_indexed()
    assert recalled("the Chamonix chalet") == {"Alice's chalet in Chamonix has three bedrooms"}


@pytest.mark.parametrize(
    ("message", "window"),
    [
        ("Where is my chalet?", 90),
        ("What did I tell you in 2024?", None),
        ("Do you remember when we talked about skiing?", None),
        ("Qu'est-ce que je t'ai dit l'an dernier ?", None),
        ("On en a parlé il y a six mois", None),
        ("Tu te souviens de mon chalet ?", None),
    ],
)
def test_a_message_naming_a_time_lifts_the_window(settings, message, window):
    settings.MEMORY_RECALL_WINDOW_DAYS = 90
    assert recency.recall_window(message) == window
