"""Claude's conversation_search and recent_chats, through the real SDK and the fake API."""

import json

import pytest
from asgiref.sync import sync_to_async

from chat import past_chats
from chat.models import Message, UserPreferences
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)


def offered(request_body) -> list[str]:
    return [tool["name"] for tool in request_body.get("tools", [])]


def tool_result(request_body) -> dict:
    """The tool_result block the app sent back in this request."""
    block = request_body["messages"][-1]["content"][0]
    assert block["type"] == "tool_result"
    return block


async def chats(*specs):
    return [await sync_to_async(make_conversation)(*spec[:-1], **spec[-1]) for spec in specs]


async def test_it_offers_both_tools_when_there_are_other_chats(fake_anthropic, alice):
    old, here = await chats((alice, "Old", "Hi", {}), (alice, "Here", {}))

    await send(here, "Hello")

    request = fake_anthropic.requests[0]
    assert offered(request) == ["conversation_search", "recent_chats"]
    assert "conversation_search" in request["system"]
    schema = request["tools"][1]["input_schema"]
    assert set(schema["properties"]) == {"n", "before", "after"}


async def test_it_offers_nothing_without_another_chat(fake_anthropic, alice):
    (only,) = await chats((alice, "Only", {}))

    await send(only, "Hello")

    assert "tools" not in fake_anthropic.requests[0]


async def test_it_offers_nothing_when_the_user_turned_it_off(fake_anthropic, alice):
    await UserPreferences.objects.acreate(user=alice, reference_past_chats=False)
    old, here = await chats((alice, "Old", "Hi", {}), (alice, "Here", {}))

    await send(here, "Hello")

    assert "tools" not in fake_anthropic.requests[0]
    assert "past_chats" not in fake_anthropic.requests[0]["system"]


async def test_it_answers_a_conversation_search(fake_anthropic, alice, bob):
    ski, here = await chats(
        (alice, "Ski week", "Book the chalet in Morzine for February.", "Done.", {}),
        (alice, "Here", "Morzine came up in this chat too.", "Yes.", {}),
    )
    await chats((bob, "Bob's", "Morzine is where Bob skis.", {}))
    fake_anthropic.tool_use("conversation_search", {"query": "morzine"}, tool_id="toolu_s")
    fake_anthropic.reply("You booked a chalet in Morzine.")

    events = await send(here, "Where was the chalet?")

    result = tool_result(fake_anthropic.requests[1])
    assert result["tool_use_id"] == "toolu_s" and result["is_error"] is False
    found = json.loads(result["content"])["results"]
    hit = await Message.objects.aget(conversation=ski, role="user")
    assert found == [
        {
            "chat": "Ski week",
            "url": f"/c/{ski.pk}/?m={hit.pk}#message-{hit.pk}",
            "date": hit.created_at.date().isoformat(),
            "from": "user",
            "passage": "Book the chalet in Morzine for February.",
        }
    ]
    finished = [e for e in events if e.kind == "tool_finished"]
    assert [e.summary for e in finished] == ["Searched your chats for 'morzine' — 1 result"]
    saved = await Message.objects.aget(pk=events[-1].message.pk)
    assert saved.tool_calls[0]["summary"] == "Searched your chats for 'morzine' — 1 result"


async def test_it_answers_recent_chats_between_dates(fake_anthropic, alice, bob):
    await chats(
        (alice, "Ancient", "From long ago", {"days_ago": 400}),
        (alice, "Last month", "Planning the garden", {"days_ago": 30}),
        (alice, "Last week", "Fixing the bike", {"days_ago": 7}),
        (bob, "Bob's recent", "Bob things", {"days_ago": 2}),
    )
    (here,) = await chats((alice, "Here", {}))
    fake_anthropic.tool_use(
        "recent_chats",
        {"n": 5, "after": "2000-01-01", "before": (await _days_ago(3)).isoformat()},
        tool_id="toolu_r",
    )
    fake_anthropic.reply("Here they are.")

    events = await send(here, "What did we talk about recently?")

    listed = json.loads(tool_result(fake_anthropic.requests[1])["content"])["chats"]
    assert [c["title"] for c in listed] == ["Last week", "Last month", "Ancient"]
    assert listed[0]["gist"] == "Fixing the bike"
    assert listed[0]["url"].startswith("/c/") and listed[0]["messages"] == 1
    summaries = [e.summary for e in events if e.kind == "tool_finished"]
    assert summaries == ["Looked at your recent chats — 3 chats"]


async def test_it_lists_the_newest_first_and_counts(fake_anthropic, alice):
    await chats(*[(alice, f"Chat {n}", "hello", {"days_ago": n}) for n in range(1, 8)])
    (here,) = await chats((alice, "Here", {}))
    fake_anthropic.tool_use("recent_chats", {"n": 2}, tool_id="toolu_n")
    fake_anthropic.reply("Two.")

    await send(here, "Last two chats?")

    listed = json.loads(tool_result(fake_anthropic.requests[1])["content"])["chats"]
    assert [c["title"] for c in listed] == ["Chat 1", "Chat 2"]


@pytest.mark.parametrize(
    ("name", "tool_input", "field"),
    [
        ("conversation_search", {}, "query"),
        ("conversation_search", {"query": "   "}, "query"),
        ("conversation_search", {"query": ["ski"]}, "query"),
        ("recent_chats", {"n": 0}, "n"),
        ("recent_chats", {"n": True}, "n"),
        ("recent_chats", {"n": 10**30}, "n"),
        ("recent_chats", {"before": "last tuesday"}, "before"),
        ("recent_chats", {"after": "2026-02-30"}, "after"),
        ("recent_chats", {"after": "2026-03-02", "before": "2026-03-01"}, "after"),
    ],
)
async def test_it_tells_claude_which_field_is_wrong(fake_anthropic, alice, name, tool_input, field):
    old, here = await chats((alice, "Old", "Hi", {}), (alice, "Here", {}))
    fake_anthropic.tool_use(name, tool_input, tool_id="toolu_bad")
    fake_anthropic.reply("Sorry.")

    events = await send(here, "Look it up")

    result = tool_result(fake_anthropic.requests[1])
    assert result["is_error"] is True
    assert json.loads(result["content"])["error"]["field"] == field
    assert [e.is_error for e in events if e.kind == "tool_finished"] == [True]


async def test_it_takes_hostile_search_text_as_words(fake_anthropic, alice):
    old, here = await chats((alice, "Old", 'The "NEAR" trick', {}), (alice, "Here", {}))
    fake_anthropic.tool_use("conversation_search", {"query": 'NEAR("x" *) -:'})
    fake_anthropic.reply("Nothing much.")

    await send(here, "Search oddly")

    result = tool_result(fake_anthropic.requests[1])
    assert result["is_error"] is False
    assert json.loads(result["content"])["results"] == []


@pytest.mark.parametrize(
    ("name", "tool_input", "field"),
    [
        # The API never sends these (its JSON is valid UTF-8); the executor copes anyway.
        ("recent_chats", {"after": "\ud800"}, "after"),
        ("recent_chats", {"before": "2026-01-01\x00"}, "before"),
        ("recent_chats", {"before": "9" * 100_000}, "before"),
        ("conversation_search", {"query": None}, "query"),
    ],
)
async def test_it_refuses_what_no_model_should_send(alice, name, tool_input, field):
    old, here = await chats((alice, "Old", "Hi", {}), (alice, "Here", {}))

    outcome = await past_chats.make_executor(alice, here)(name, tool_input)

    assert outcome.is_error
    assert json.loads(outcome.content)["error"]["field"] == field


async def test_it_searches_with_a_lone_surrogate_in_the_words(alice):
    old, here = await chats((alice, "Old", "Surfing in Biarritz", {}), (alice, "Here", {}))

    outcome = await past_chats.make_executor(alice, here)(
        "conversation_search", {"query": "biarritz\ud800"}
    )

    assert not outcome.is_error
    assert [r["chat"] for r in json.loads(outcome.content)["results"]] == ["Old"]


async def _days_ago(days):
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=days)


async def test_the_offline_responder_searches_past_chats_through_the_real_tool(settings, alice):
    settings.ANTHROPIC_API_KEY = ""
    ski, here = await chats(
        (alice, "Ski week", "Book the chalet in Morzine for February.", {}),
        (alice, "Here", {}),
    )

    events = await send(here, "Search my chats for chalet")

    finished = [e for e in events if e.kind == "tool_finished"]
    assert [e.summary for e in finished] == ["Searched your chats for 'chalet' — 1 result"]
    answer = await Message.objects.aget(pk=events[-1].message.pk)
    hit = await Message.objects.aget(conversation=ski)
    assert f"[Ski week](/c/{ski.pk}/?m={hit.pk}#message-{hit.pk})" in answer.content
    assert "Book the chalet in Morzine for February." in answer.content


async def test_it_never_reads_out_what_the_user_marked_private(alice):
    old, here = await chats(
        (
            alice,
            "Health",
            "My doctor is in Geneva. <private>The diagnosis is shingles.</private> "
            "I see her on Tuesdays.",
            {},
        ),
        (alice, "Here", {}),
    )
    execute = past_chats.make_executor(alice, here)

    private_only = await execute("conversation_search", {"query": "shingles"})
    public = await execute("conversation_search", {"query": "geneva"})
    listed = await execute("recent_chats", {"n": 5})

    assert json.loads(private_only.content)["results"] == []
    assert private_only.summary == "Searched your chats for 'shingles' — 0 results"
    (found,) = json.loads(public.content)["results"]
    assert "Geneva" in found["passage"] and "Tuesdays" in found["passage"]
    assert "shingles" not in public.content and "diagnosis" not in public.content
    assert "shingles" not in listed.content
