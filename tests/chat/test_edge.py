"""Every input edge of the chat answers hostile input with a clear 400 (or an error frame):
the HTTP API, the pages' forms and parameters, and the WebSocket. Nothing is stored."""

import json

import pytest
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.test import AsyncClient

from chat import edge
from chat.models import Conversation, Message
from chat.routing import websocket_urlpatterns

pytestmark = pytest.mark.django_db

DEEP = "[" * 100_000 + "]" * 100_000
SURROGATE = '"\\ud800"'  # the JSON escape of a lone surrogate, as a client sends it
HUGE = "x" * 100_000


def post_raw(client, url, raw, method="post"):
    return getattr(client, method)(url, data=raw, content_type="application/json")


def error_of(response):
    assert response.status_code == 400, response.content[:300]
    return response.json()["error"]


# --- the parser and the checks themselves ------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (DEEP, "nested deeper than 32 levels"),
        ('{"a":' * 40 + "1" + "}" * 40, "nested deeper than 32 levels"),
        ('{"n": NaN}', "numbers must be finite"),
        ('{"n": Infinity}', "numbers must be finite"),
        ('{"n": -Infinity}', "numbers must be finite"),
        ('{"n": 1e999}', "too large to be finite"),
        ('{"n": ' + "9" * 5000 + "}", "longer than 19 digits"),
        ("[1]", "must be a JSON object"),
        ('"text"', "must be a JSON object"),
        (b"\xff\xfe{}", "is not valid UTF-8"),
        ("{", "is not valid JSON"),
    ],
)
def test_it_refuses_what_python_json_accepts_but_nothing_can_hold(raw, reason):
    with pytest.raises(edge.ChatInputError) as refused:
        edge.parse_json(raw, field="body")
    assert refused.value.field == "body"
    assert reason in refused.value.reason


def test_it_parses_ordinary_bodies_and_keeps_deep_enough_ones():
    assert edge.parse_json(b"") == {}
    assert edge.parse_json('{"n": 1.5, "big": 1234567890123456789}') == {
        "n": 1.5,
        "big": 1234567890123456789,
    }
    nested = '{"a":' * 31 + "1" + "}" * 31
    assert edge.parse_json(nested)["a"]["a"]


@pytest.mark.parametrize("text", ["\ud800", "a\udfffb", "nul\x00byte"])
def test_it_refuses_text_that_cannot_be_stored(text):
    with pytest.raises(edge.ChatInputError) as refused:
        edge.clean_text("title", text)
    assert (refused.value.field, refused.value.reason) == (
        "title",
        "contains characters that cannot be stored",
    )


@pytest.mark.parametrize("raw", ["9" * 20, "1e3", "١٢", "1_000", "-1", "nan", "0x10", " "])
def test_it_reads_integer_parameters_as_digits_in_range(raw):
    with pytest.raises(edge.ChatInputError) as refused:
        edge.int_param("offset", raw, default=0, low=0, high=10**9)
    assert refused.value.reason == "must be an integer between 0 and 1000000000"


# --- the JSON API ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        (DEEP, "body", "nested deeper"),
        ('{"title": ' + SURROGATE + "}", "title", "contains characters that cannot be stored"),
        ('{"title": "a\\u0000b"}', "title", "contains characters that cannot be stored"),
        ('{"title": NaN}', "body", "numbers must be finite"),
        ('{"title": "' + HUGE + '"}', "title", "at most 200 characters"),
        ('{"model": "' + HUGE + '"}', "model", "unknown model"),
        ('{"' + HUGE + '": 1}', "x" * 39 + "…", "unknown field"),
        ('{"title": ["Ski"]}', "title", "must be a string"),
    ],
)
def test_it_refuses_hostile_conversations(alice_client, alice, raw, field, reason):
    error = error_of(post_raw(alice_client, "/api/conversations", raw))
    assert error["field"] == field and reason in error["reason"]
    assert not Conversation.objects.filter(user=alice).exists()


@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ('{"title": ' + SURROGATE + "}", "title", "cannot be stored"),
        ('{"pinned": 1e400}', "body", "too large to be finite"),
        ('{"pinned": 1}', "pinned", "must be true or false"),
        ('{"pinned": ' + "1" * 30 + "}", "body", "longer than 19 digits"),
        ('{"title": {"a": {"b": []}}}', "title", "must be a string"),
        (DEEP, "body", "nested deeper"),
    ],
)
def test_it_refuses_hostile_updates_and_keeps_the_conversation(
    alice_client, alice, raw, field, reason
):
    conversation = Conversation.objects.create(user=alice, title="Keep")
    error = error_of(post_raw(alice_client, f"/api/conversations/{conversation.pk}", raw, "patch"))
    assert error["field"] == field and reason in error["reason"]
    conversation.refresh_from_db()
    assert (conversation.title, conversation.pinned) == ("Keep", False)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("raw", "field", "reason"),
    [
        ('{"content": ' + SURROGATE + "}", "content", "cannot be stored"),
        ('{"content": "before\\u0000after"}', "content", "cannot be stored"),
        ('{"content": "' + "x" * 100_001 + '"}', "content", "at most 100000 characters"),
        ('{"content": 12}', "content", "must be a string"),
        ('{"content": Infinity}', "body", "numbers must be finite"),
        (DEEP, "body", "nested deeper"),
        ("[]", "body", "must be a JSON object"),
    ],
)
async def test_it_refuses_hostile_messages_before_any_turn(alice, raw, field, reason):
    conversation = await Conversation.objects.acreate(user=alice, title="Keep")
    client = AsyncClient()
    await client.aforce_login(alice)
    response = await client.post(
        f"/api/conversations/{conversation.pk}/messages",
        data=raw,
        content_type="application/json",
    )
    error = error_of(response)
    assert error["field"] == field and reason in error["reason"]
    assert not await Message.objects.filter(conversation=conversation).aexists()


@pytest.mark.parametrize("query", ["offset=" + "9" * 20, "limit=" + "9" * 20, "limit=1.5"])
def test_it_refuses_out_of_range_list_parameters(alice_client, query):
    error = error_of(alice_client.get(f"/api/conversations?{query}"))
    assert "must be an integer between" in error["reason"]


# --- the pages ---------------------------------------------------------------------------


@pytest.mark.parametrize("offset", ["9" * 20, "-5", "1e9", "x"])
def test_it_refuses_a_sidebar_offset_that_is_not_a_page(alice_client, offset):
    response = alice_client.get(f"/sidebar/?offset={offset}")
    assert response.status_code == 400
    assert response.content.decode() == ("Offset must be an integer between 0 and 1000000000.")


def test_it_ignores_a_current_conversation_id_that_cannot_exist(alice_client, alice):
    conversation = Conversation.objects.create(user=alice, title="Old")
    response = alice_client.post(
        f"/c/{conversation.pk}/rename/",
        {"title": "New", "current": "9" * 20},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200 and "New" in response.content.decode()


def test_it_refuses_a_nul_byte_in_a_new_chat_or_a_title(alice_client, alice):
    response = alice_client.post("/c/new/", {"content": "hello\x00"})
    assert response.status_code == 400
    assert "contains characters that cannot be stored" in response.content.decode()
    conversation = Conversation.objects.create(user=alice, title="Keep")
    renamed = alice_client.post(f"/c/{conversation.pk}/rename/", {"title": "a\x00b"})
    assert renamed.status_code == 400
    assert renamed.content.decode() == "Title contains characters that cannot be stored."
    assert Conversation.objects.filter(user=alice).count() == 1


# --- the WebSocket -----------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("frame", "said"),
    [
        ('{"action": "retry", "message_id": Infinity}', "numbers must be finite"),
        ('{"action": "retry", "message_id": ' + SURROGATE + "}", "Message_id must be a positive"),
        ('{"action": "retry", "message_id": 1e999}', "too large to be finite"),
        ('{"action": "retry", "message_id": 1.5}', "Message_id must be a positive integer id"),
        ('{"action": "retry", "message_id": ' + "9" * 18 + "}", "Message_id no failed answer"),
        ('{"action": "retry", "message_id": true}', "Message_id must be a positive integer id"),
        (DEEP, "body is nested deeper than 32 levels"),
        ('{"content": ' + SURROGATE + "}", "Content contains characters that cannot be stored"),
        ('{"content": "' + HUGE + 'x"}', "Content must be at most 100000 characters"),
        ('{"action": ["send"]}', "Unknown action."),
        ('{"action": "explode"}', "Unknown action."),
        ("[1, 2]", "body must be a JSON object"),
        ("null", "body must be a JSON object"),
        ("not json", "body is not valid JSON"),
    ],
)
async def test_it_answers_a_hostile_frame_with_an_error_and_stays_open(
    alice, fake_anthropic, frame, said
):
    fake_anthropic.reply("Still here.")
    conversation = await Conversation.objects.acreate(user=alice)
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = alice
    assert (await communicator.connect())[0]

    await communicator.send_to(text_data=frame)
    error = await communicator.receive_from(timeout=30)
    assert "composer-errors" in error and said in error

    # The same socket still works: the next message is answered.
    await communicator.send_to(text_data=json.dumps({"content": "Are you there?"}))
    frames = []
    while 'data-busy="0"' not in (frames[-1] if frames else ""):
        frames.append(await communicator.receive_from(timeout=30))
    await communicator.disconnect()
    assert "Still here." in frames[-1]
    stored = [m.content async for m in Message.objects.filter(conversation=conversation)]
    assert stored == ["Are you there?", "Still here."]


@pytest.mark.django_db(transaction=True)
async def test_it_refuses_binary_frames(alice):
    conversation = await Conversation.objects.acreate(user=alice)
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = alice
    assert (await communicator.connect())[0]
    await communicator.send_to(bytes_data=b'{"content": "hi"}')
    error = await communicator.receive_from(timeout=30)
    await communicator.disconnect()
    assert "send JSON text frames" in error
    assert not await Message.objects.filter(conversation=conversation).aexists()
