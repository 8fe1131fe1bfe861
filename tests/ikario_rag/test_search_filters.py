"""search_memories' optional filters over MCP: subjects, a self/goal subcategory, and the
recency window (`recent_days`), which leaves facts of any age in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.ikario_rag.conftest import call


async def _add(client, content, **context):
    error, added = await call(client, "add_thought", content=content, context=context)
    assert not error, added
    return added["id"]


async def _found(client, query, **filters) -> list[str]:
    error, result = await call(client, "search_memories", query=query, n_results=10, **filters)
    assert not error, result
    return [r["content"] for r in result["results"]]


async def test_it_finds_what_is_about_a_subject_by_label_or_by_name(client):
    await _add(client, "He broke his shoulder skiing", kind="fact", subjects=["Mickaël"])
    await _add(client, "Mickael skis every winter in Chamonix", kind="thought")
    await _add(client, "Léa skis in Chamonix too", kind="thought", subjects=["Léa"])

    about = await _found(client, "skiing in Chamonix", subjects=["mickaël"])

    assert sorted(about) == [
        "He broke his shoulder skiing",
        "Mickael skis every winter in Chamonix",
    ]


async def test_it_keeps_a_subcategory_as_a_tag_and_filters_on_it(client):
    memory_id = await _add(client, "I cannot browse the web", kind="self", subcategory="limitation")
    await _add(
        client, "I can read the web pages users paste", kind="self", subcategory="capability"
    )

    assert await _found(client, "the web", subcategory="limitation") == ["I cannot browse the web"]
    _, got = await call(client, "get_memories", ids=[memory_id])
    assert got["memories"][0]["metadata"]["tags"] == ["limitation"]
    error, message = await call(
        client, "add_thought", content="x y", context={"kind": "fact", "subcategory": "limitation"}
    )
    assert error and message == "context.subcategory is only for kind self or goal"
    error, message = await call(
        client, "add_thought", content="x y", context={"kind": "goal", "subcategory": "limitation"}
    )
    assert error and "context.subcategory" in message


async def test_its_recency_window_leaves_old_events_out_and_facts_in(client):
    old = (datetime.now(UTC) - timedelta(days=200)).isoformat()
    await _add(client, "We planned the Lisbon trip over dinner", kind="thought", date=old)
    await _add(client, "Alice's favourite city is Lisbon", kind="fact", date=old)
    await _add(client, "We booked the Lisbon hotel", kind="thought")

    windowed = await _found(client, "the Lisbon trip", recent_days=90, mode="semantic")
    everything = await _found(client, "the Lisbon trip", mode="semantic")

    assert sorted(windowed) == ["Alice's favourite city is Lisbon", "We booked the Lisbon hotel"]
    assert "We planned the Lisbon trip over dinner" in everything
    assert sorted(await _found(client, "the Lisbon trip", recent_days=90, mode="text")) == sorted(
        windowed
    )
