"""Tool lines as people read them: labelled input, the items found, never raw JSON, and
everything escaped."""

import json

import pytest
from django.urls import reverse

from chat.readable import tool_call
from tests.fixtures.builders import add_message, make_conversation

SEARCH_RESULT = json.dumps(
    {
        "results": [
            {"id": "a1", "content": "Alice skied in Chamonix", "date": "2026-01-10T09:00:00Z"},
            {"id": "b2", "content": "Marc came too"},
        ],
        "mode_used": "hybrid",
    }
)


def test_it_reads_the_input_as_labelled_lines_and_the_result_as_its_items():
    shown = tool_call(
        {
            "input": {"query": "ski trip", "n_results": 5, "tags": ["a", "b"]},
            "result": SEARCH_RESULT,
        }
    )
    assert shown.input == [("Query", "ski trip"), ("N results", "5"), ("Tags", "a, b")]
    assert shown.items == ["Alice skied in Chamonix (2026-01-10)", "Marc came too"]
    assert shown.fields == [("Mode used", "hybrid")]


def test_it_shows_the_whole_items_of_a_result_stored_cut_short():
    shown = tool_call({"input": {}, "result": SEARCH_RESULT[: SEARCH_RESULT.index("Marc") + 4]})
    assert shown.items == ["Alice skied in Chamonix (2026-01-10)"] and shown.more_items
    assert tool_call({"input": {}, "result": SEARCH_RESULT[:40]}).text == (
        "The result is too long to show."
    )


def test_it_shows_an_error_as_its_text():
    shown = tool_call({"input": {"query": "x"}, "result": "Memory unavailable: try later."})
    assert shown.text == "Memory unavailable: try later." and shown.items is None


@pytest.mark.django_db
def test_it_renders_a_tool_line_as_a_chip_without_json_and_escaped(alice_client, alice):
    conversation = make_conversation(alice, "Chat", "What do you know?")
    hostile = json.dumps({"results": [{"content": "<script>alert(1)</script> skiing"}]})
    add_message(
        conversation,
        "Here it is.",
        role="assistant",
        tool_calls=[
            {
                "id": "toolu_1",
                "name": "search_memories",
                "input": {"query": "<b>ski</b>"},
                "result": hostile,
                "is_error": False,
                "summary": "Searched memories for 'ski' — 1 result",
            }
        ],
    )

    html = alice_client.get(reverse("chat:conversation", args=[conversation.pk])).content.decode()

    detail = html[html.index('id="tool-toolu_1"') :]
    detail = detail[: detail.index("</details>")]
    assert "&lt;script&gt;alert(1)&lt;/script&gt; skiing" in detail
    assert "&lt;b&gt;ski&lt;/b&gt;" in detail
    assert "<script>" not in detail and '{"' not in detail and "&quot;results" not in detail
