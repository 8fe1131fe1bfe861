"""Claude's conversation_summary: the conversation so far (asked, learnt, done, next)."""

import json

import pytest
from asgiref.sync import sync_to_async

from chat.models import Message
from tests.fixtures.builders import make_conversation, send

pytestmark = pytest.mark.django_db(transaction=True)


def offered(request_body) -> list[str]:
    return [tool["name"] for tool in request_body.get("tools", [])]


def _marathon_chat(user):
    chat = make_conversation(
        user,
        "Marathon",
        "I'm training for the Lyon marathon in April. What pace should I aim for?",
        "Aim for 5:40 per kilometre on long runs. Next, we will plan your taper week.",
        "My knee hurts after 20 km <private>Dr Martin's number is 0612</private>. Should I rest?",
        "Rest two days, then run short. I saved that your knee hurts after 20 km.",
    )
    answer = Message.objects.filter(conversation=chat, role="assistant").order_by("id").last()
    answer.tool_calls = [
        {
            "id": "toolu_1",
            "name": "save_memory",
            "input": {"content": "Alice's knee hurts after 20 km", "category": "contextuelle"},
            "result": json.dumps({"saved": True, "id": "m1", "status": "created"}),
            "is_error": False,
            "summary": "Saved to memory",
        }
    ]
    answer.save()
    return chat


async def test_claude_reads_the_conversations_own_summary(fake_anthropic, alice):
    chat = await sync_to_async(_marathon_chat)(alice)
    fake_anthropic.tool_use("conversation_summary", {})
    fake_anthropic.reply("So far: your pace, your knee, and the taper week next.")

    events = await send(chat, "Where are we so far?")

    assert "conversation_summary" in offered(fake_anthropic.requests[0])
    finished = [e for e in events if e.kind == "tool_finished"]
    assert [(e.name, e.summary, e.is_error) for e in finished] == [
        ("conversation_summary", "Summarised this conversation — 2 exchanges", False)
    ]
    block = fake_anthropic.requests[1]["messages"][-1]["content"][0]
    content = block["content"]
    text = content if isinstance(content, str) else "".join(p["text"] for p in content)
    summary = json.loads(text)
    assert summary["exchanges"] == 2
    assert summary["asked"] == ["What pace should I aim for?", "Should I rest?"]
    assert "I'm training for the Lyon marathon in April." in summary["learnt"]
    assert summary["done"] == ["- save_memory 'Alice's knee hurts after 20 km' → Saved to memory"]
    assert any("plan your taper week" in s for s in summary["next"])
    assert "0612" not in text  # a private span never shows
    assert "Where are we so far?" not in text  # only what came before the question


async def test_it_is_not_offered_to_a_short_or_incognito_chat(fake_anthropic, alice):
    short = await sync_to_async(make_conversation)(alice, "Short", "Hi", "Hello!")
    hidden = await sync_to_async(_marathon_chat)(alice)
    hidden.incognito = True
    await hidden.asave()

    await send(short, "How are you?")
    await send(hidden, "Recap?")

    assert "conversation_summary" not in offered(fake_anthropic.requests[0])
    assert "conversation_summary" not in offered(fake_anthropic.requests[1])
