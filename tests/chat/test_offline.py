"""The offline responder decides, deterministically, what a keyless install does."""

import json

from chat.offline import LABEL, plan_reply

TOOLS = [{"name": "save_memory"}, {"name": "search_memories"}]


def user(text):
    return [{"role": "user", "content": text}]


def test_it_saves_what_the_user_asks_it_to_remember():
    plan = plan_reply(system="", messages=user("Remember that Léa lives in Lyon."), tools=TOOLS)
    call = plan["tool_use"]
    assert call["name"] == "save_memory"
    expected = {"content": "Léa lives in Lyon.", "category": "contextuelle", "tags": []}
    assert call["input"] == expected


def test_it_understands_french_requests():
    plan = plan_reply(system="", messages=user("Retiens que Paul joue du cor."), tools=TOOLS)
    assert plan["tool_use"]["input"]["content"] == "Paul joue du cor."
    plan = plan_reply(system="", messages=user("Que sais-tu de Paul ?"), tools=TOOLS)
    assert plan["tool_use"]["name"] == "search_memories"
    assert plan["tool_use"]["input"]["query"] == "Paul"


def test_it_searches_when_asked_what_it_knows():
    plan = plan_reply(system="", messages=user("What do you know about my sister?"), tools=TOOLS)
    assert plan["tool_use"]["name"] == "search_memories"
    assert plan["tool_use"]["input"] == {"query": "my sister", "n_results": 5}


def test_it_only_echoes_when_no_memory_tools_are_offered():
    plan = plan_reply(system="", messages=user("Remember that I like tea"), tools=None)
    assert "tool_use" not in plan
    assert LABEL in plan["text"] and "Remember that I like tea" in plan["text"]


def test_it_quotes_the_memories_recalled_into_the_system_prompt():
    system = (
        "Guide.\n<retrieved_memories>\nIntro.\n\n"
        "- [3 days ago; contextuelle] Léa lives in Lyon\n"
        "- [yesterday; fondatrice; tags: rules, health] Léa is a nurse\n</retrieved_memories>"
    )
    plan = plan_reply(system=system, messages=user("Where should I travel?"), tools=TOOLS)
    assert "tool_use" not in plan
    # Said as a person would: what and when, no category or raw tags.
    assert "- Léa lives in Lyon (3 days ago)\n- Léa is a nurse (yesterday)" in plan["text"]
    assert "tags:" not in plan["text"] and "fondatrice" not in plan["text"]


def test_it_answers_from_what_the_tools_returned():
    call = {"type": "tool_use", "id": "t1", "name": "search_memories", "input": {"query": "Léa"}}
    found = {"results": [{"content": "Léa lives in Lyon"}, {"content": "Léa skis"}]}
    messages = user("What do you know about Léa?") + [
        {"role": "assistant", "content": [call]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": json.dumps(found)}],
        },
    ]
    text = plan_reply(system="", messages=messages, tools=TOOLS)["text"]
    assert "- Léa lives in Lyon\n- Léa skis" in text


def test_it_says_when_a_tool_failed():
    call = {"type": "tool_use", "id": "t1", "name": "save_memory", "input": {}}
    failed = {"type": "tool_result", "tool_use_id": "t1", "content": "down", "is_error": True}
    messages = user("Remember that x") + [
        {"role": "assistant", "content": [call]},
        {"role": "user", "content": [failed]},
    ]
    text = plan_reply(system="", messages=messages, tools=TOOLS)["text"]
    assert "The memory tool failed: down" in text


async def test_it_answers_in_the_language_of_the_page():
    """The socket activates the page's language; the answer, planned in a worker thread,
    is in it (it was English whatever the page's language)."""
    from django.utils import translation

    from chat.offline import offline_round

    class Result:
        def __init__(self, **fields):
            self.fields = fields

    translation.activate("fr")
    try:
        pieces = [
            piece
            async for piece in offline_round(
                system="", messages=user("Bonjour !"), tools=None, result_type=Result
            )
        ]
    finally:
        translation.deactivate()
    said = "".join(piece for piece in pieces if isinstance(piece, str))
    assert said.startswith("*Répondeur hors ligne"), said
    assert "Vous avez dit : « Bonjour ! »." in said
