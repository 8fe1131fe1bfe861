"""<private> spans, however written, never reach what memory writes on the Django side: the
retrieval log (MemoryRetrieval.query), the tool lines stored with an answer, the logs.

One rule decides what is private: ikario_rag.private.strip (nested spans, spaces, any
casing, attributes, entities, compatibility forms, invisible characters in the word).
"""

import logging

import pytest
from asgiref.sync import sync_to_async
from hypothesis import given
from hypothesis import strategies as st

from chat.models import Message
from memory.models import MemoryRetrieval
from memory.recall.retrieval import searchable_text as query_for
from memory.recall.tools import _quoted
from tests.fixtures.builders import make_conversation, send
from tests.fixtures.properties import stable_examples

SECRET = "Zanzibar4417"

OPENINGS = [
    "<private>", "<private >", "< private>", "<PRIVATE>", "<Private class='x'>",
    "&lt;private&gt;", "&amp;lt;private&amp;gt;", "&#60;private&#62;", "&#x3C;PRIVATE&#x3E;",
    "＜private＞", "<pri\u200bvate>",
]  # fmt: skip
CLOSINGS = [
    "</private>", "</private >", "</ private>", "</PRIVATE>", "&lt;/private&gt;",
    "&#60;/private&#62;", "＜/private＞", "</pri\u200bvate>",
]  # fmt: skip
_public = st.sampled_from(["", "my bank", "code:", " ", "\n", "privately", "<p>", "&amp;", "<"])


@st.composite
def _span(draw, depth=0):
    """A private span holding the secret, maybe nested inside others."""
    inner = SECRET
    if depth < 3 and draw(st.booleans()):
        inner = draw(_public) + draw(_span(depth + 1)) + draw(_public)
    closing = draw(st.sampled_from(CLOSINGS)) if draw(st.integers(0, 9)) else ""  # unclosed
    return draw(st.sampled_from(OPENINGS)) + inner + closing


_messages = st.lists(st.one_of(_public, _span()), min_size=1, max_size=6).map("".join)


@stable_examples(300)
@given(message=_messages)
def test_it_keeps_every_variant_of_a_span_out_of_the_query_and_the_tool_line(message):
    assert SECRET.casefold() not in query_for(message).casefold()
    assert SECRET.casefold() not in _quoted(message, limit=10_000).casefold()


def test_it_keeps_what_is_public_around_a_span():
    assert query_for("My code is <PRIVATE >4321</private > , what about my bank?") == (
        "My code is , what about my bank?"
    )


VARIANTS = {
    "nested": f"<private>a <private>{SECRET}</private> b</private>",
    "spaced": f"< private >{SECRET}</ private >",
    "cased": f"<PrIvAtE>{SECRET}</pRiVaTe>",
    "entities": f"&lt;private&gt;{SECRET}&lt;/private&gt;",
}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("span", VARIANTS.values(), ids=VARIANTS.keys())
async def test_it_writes_no_private_text_through_a_whole_turn(
    span, alice, memory_server, fake_anthropic, caplog
):
    caplog.set_level(logging.DEBUG, logger="memory")
    chat = await sync_to_async(make_conversation)(alice, "Bank")
    # The model repeats the span in its own search: memory still writes none of it.
    fake_anthropic.tool_use("search_memories", {"query": f"bank {span} account"})
    fake_anthropic.reply("Noted.")

    events = await send(chat, f"My bank PIN is {span}; which bank do I use?")

    retrieval = await MemoryRetrieval.objects.aget(conversation=chat)
    answer = await Message.objects.aget(conversation=chat, role="assistant")
    (finished,) = [e for e in events if e.kind == "tool_finished"]
    assert retrieval.query == "My bank PIN is ; which bank do I use?"
    assert finished.summary == "Searched memories for 'bank account' — 0 results"
    assert answer.tool_calls[0]["summary"] == finished.summary
    assert SECRET not in answer.tool_calls[0]["result"]
    assert caplog.records and SECRET not in caplog.text
