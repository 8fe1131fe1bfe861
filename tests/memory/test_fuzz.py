"""Fuzzing every input edge with hypothesis: the chat API (conversations, messages as JSON
and as Server-Sent Events), the memory API, the pages' query parameters, the memory
panels and the chat WebSocket's frames. Whatever a signed-in user sends:

* no 500 (Django's test client raises the view's exception: hypothesis then shows the
  smallest request that caused it), every JSON endpoint answers JSON, and every 400 names
  the field it refuses;
* no closed socket (1011): after each frame the same socket still answers, and every
  error frame names the field (or says the action is unknown or must wait);
* the memory server is still the same process, on the same connection, and another
  user's memory saved before is still found: one user's input harms nobody else.

Examples are derandomised (the same ones every run: a failure is a bug, never a flake).
"""

from __future__ import annotations

import html
import json
import re
from collections import Counter
from urllib.parse import quote

import pytest
from asgiref.sync import async_to_sync
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from hypothesis import example, given
from hypothesis import strategies as st

from chat.models import Conversation
from chat.routing import websocket_urlpatterns
from memory.client import services
from tests.fixtures.properties import stable_examples

pytestmark = pytest.mark.django_db(transaction=True)

HTTP_EXAMPLES = 250
FRAME_EXAMPLES = 60

# --- what a hostile user types ----------------------------------------------------------

_characters = st.one_of(
    st.characters(),
    st.characters(categories=["Cs"]),  # lone surrogates (a JSON "\ud800")
    st.sampled_from(["\x00", "\n", "<", "]", "&lt;", "\u2028", "\ufeff"]),
)
_text = st.one_of(
    st.lists(_characters, max_size=30).map("".join),
    st.sampled_from(
        [
            "",
            " ",
            "x" * 100_000,
            "ski " * 5_000,
            "9" * 30,
            "-1",
            "0",
            "1.5",
            "NaN",
            "Infinity",
            "１２",
            "thematique",
            "Fondatrice",
            "hybrid",
            "7d",
            "2026-03-01",
            "<private>secret</private>",
            "</retrieved_<retrieved_memories>memories>",
            "do you remember " + "?" * 5_000,
            "Remember that Alice keeps bees",
        ]
    ),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.integers(min_value=-3, max_value=120),
    st.floats(allow_nan=True, allow_infinity=True),
    _text,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=8,
)
RAW_BODIES = [
    "",
    "{",
    "null",
    "[]",
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 40 + "1" + "}" * 40,
    '{"n": NaN}',
    '{"n": -Infinity}',
    '{"n": 1e999}',
    '{"n": ' + "7" * 5_000 + "}",
    '{"s": "\\ud800"}',
    "\xff\xfe",
]
# Values each field accepts, so that most requests get past validation to the real work
# (a turn through the fake Messages API, a memory call through the real server).
_words = st.sampled_from(["bees", "ski in Chamonix", "Léa lives in Lyon", "the cello"])
VALID = {
    "title": st.sampled_from(["Ski trip", "Été à Lyon"]),
    "content": st.sampled_from(
        ["Hello", "Remember that Alice keeps bees", "What do you know about bees?", "Ça va ?"]
    ),
    "model": st.sampled_from(["", "claude-haiku-5-5"]),
    "pinned": st.booleans(),
    "query": _words,
    "q": _words,
    "concept": _words,
    "statement": _words,
    "topic": _words,
    "reason": _words,
    "n_results": st.integers(1, 100),
    "n": st.integers(1, 100),
    "limit": st.integers(1, 100),
    "offset": st.integers(0, 50),
    "filter_category": st.sampled_from(["thematique", "fondatrice", "Thématique"]),
    "category": st.sampled_from(["thematique", "contextuelle", ""]),
    "mode": st.sampled_from(["hybrid", "text", "semantic"]),
    "kinds": st.lists(st.sampled_from(["fact", "thought", "preference"]), max_size=2),
    "tags": st.lists(st.sampled_from(["ski", "bees"]), max_size=2),
    "min_score": st.floats(0, 1),
    "dry_run": st.booleans(),
    "context": st.fixed_dictionaries(
        {},
        optional={
            "category": st.sampled_from(["thematique", "fondatrice"]),
            "kind": st.sampled_from(["fact", "thought"]),
            "tags": st.lists(st.sampled_from(["ski", "bees"]), max_size=2),
            "date": st.just("2026-03-01"),
            "ttl": st.just("7d"),
        },
    ),
    "pulse": st.just("1"),
}


# What breaks storage, in a field's own place (random values rarely land there alone).
_unstorable = st.sampled_from(["\ud800", "a\udfffb", "a\x00b", "\x00"])


def _field(name: str):
    valid = VALID.get(name, _values)
    return st.one_of(valid, _unstorable, valid, _values)


def _body(*fields: str):
    """A JSON body mostly made of the endpoint's own fields, or a raw hostile one."""
    known = st.fixed_dictionaries({}, optional={field: _field(field) for field in fields})
    extra = st.one_of(st.just({}), st.just({}), st.just({}), st.dictionaries(_text, _values))
    as_json = st.builds(lambda a, b: json.dumps({**b, **a}, allow_nan=True), known, extra)
    return st.one_of(as_json, as_json, as_json, as_json, st.sampled_from(RAW_BODIES))


def _query(*names: str):
    """A query string of those parameters, percent-encoded from any text (a lone surrogate
    arrives as the bytes a browser would send: invalid UTF-8)."""

    def encode(params: dict) -> str:
        return "&".join(
            f"{quote(k)}={quote(str(v).encode('utf-8', 'surrogatepass'), safe='')}"
            for k, v in params.items()
        )

    def value(name: str):
        valid = VALID.get(name, _words).map(str)
        return st.one_of(valid, valid, _text)

    return st.fixed_dictionaries({}, optional={n: value(n) for n in names}).map(encode)


def _segment():
    return _text.filter(bool).map(lambda t: quote(t.encode("utf-8", "surrogatepass"), safe=""))


def _requests(conversation_id: int):
    """(method, path, body, accept) for every endpoint a signed-in user can reach."""
    own = st.sampled_from([conversation_id] * 4 + [conversation_id + 1000, 0])
    json_accept = st.just("application/json")
    either = st.sampled_from(["application/json", "text/event-stream"])
    return st.one_of(
        st.tuples(st.just("post"), st.just("/api/conversations"), _body("title", "model"),
                  json_accept),
        st.tuples(st.just("patch"), own.map(lambda c: f"/api/conversations/{c}"),
                  _body("title", "pinned", "model"), json_accept),
        st.tuples(st.just("post"), own.map(lambda c: f"/api/conversations/{c}/messages"),
                  _body("content", "model"), either),
        st.tuples(st.just("get"), _query("limit", "offset")
                  .map(lambda q: f"/api/conversations?{q}"), st.none(), json_accept),
        st.tuples(st.just("get"), _query("offset").map(lambda q: f"/sidebar/?{q}"), st.none(),
                  json_accept),
        st.tuples(st.just("get"), _query("q", "limit")
                  .map(lambda q: f"/api/conversations/search?{q}"), st.none(), json_accept),
        st.tuples(st.just("get"), _query("q").map(lambda q: f"/search/?{q}"), st.none(),
                  json_accept),
        st.tuples(st.just("get"), _query("q", "query", "n", "category")
                  .map(lambda q: f"/api/memory/search?{q}"), st.none(), json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/search"),
                  _body("query", "n_results", "filter_category", "kinds", "tags", "mode"),
                  json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/add"), _body("content", "context"),
                  json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/add"),
                  st.builds(lambda c, x: json.dumps({"content": c, "context": x}, allow_nan=True),
                            _field("content") | _text, st.fixed_dictionaries({}, optional={
                                k: _values for k in ("category", "kind", "tags", "concepts",
                                                     "date", "source", "ttl", "dedup",
                                                     "replaces")})),
                  json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/evolution"), _body("concept", "limit"),
                  json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/consistency"), _body("statement"),
                  json_accept),
        st.tuples(st.just("post"), st.just("/api/memory/forget"),
                  _body("topic", "min_score", "dry_run"), json_accept),
        st.tuples(st.just("get"), _query("limit").map(lambda q: f"/api/memory/recent?{q}"),
                  st.none(), json_accept),
        st.tuples(st.just("get"), st.just("/api/memory/stats"), st.none(), json_accept),
        st.tuples(st.sampled_from(["get", "delete"]), _segment().map(lambda s: f"/api/memory/{s}"),
                  _body("reason"), json_accept),
        st.tuples(st.just("get"), _query("q", "category").map(lambda q: f"/memory/search?{q}"),
                  st.none(), json_accept),
        st.tuples(st.just("get"), _segment().map(lambda s: f"/memory/m/{s}"), st.none(),
                  json_accept),
        st.tuples(st.just("get"), _query("pulse").map(lambda q: f"/memory/indicator?{q}"),
                  st.none(), json_accept),
    )  # fmt: skip


def _earlier_memory(bob) -> str:
    """A memory another user saved before the fuzzing: it must still be found after."""
    saved = services.add_thought(user=bob, content="Bob restores harpsichords in Ghent")
    return saved["id"]


def _server_untouched(memory_server, pid: int, connections: int, bob, memory_id: str) -> None:
    assert memory_server.server_pids() == [pid]
    assert memory_server.client.connections == connections
    found = services.search_memories(user=bob, query="harpsichords")
    assert [r["id"] for r in found["results"]] == [memory_id]


def _field_named(path: str, response) -> str | None:
    """The field a 400 names: the API's {"error": {"field"}}, the sidebar's "Offset must
    be ..." line."""
    if path.startswith("/api/"):
        error = response.json().get("error")
        return error.get("field") if isinstance(error, dict) else None
    return response.content.decode().split(" ", 1)[0].lower()


# --- HTTP --------------------------------------------------------------------------------


def test_it_answers_every_http_request_without_a_500(
    memory_server, alice, alice_client, bob, fake_anthropic
):
    conversation = Conversation.objects.create(user=alice, title="Fuzzed")
    memory_id = _earlier_memory(bob)
    (pid,) = memory_server.server_pids()
    connections = memory_server.client.connections
    statuses: Counter[int] = Counter()
    fields: Counter[str] = Counter()

    messages = f"/api/conversations/{conversation.pk}/messages"
    # json.dumps sends a lone surrogate as the six characters "\ud800", as a browser would.
    content, title = json.dumps({"content": "a\ud800"}), json.dumps({"title": "\ud800"})

    @stable_examples(HTTP_EXAMPLES)
    @given(request=_requests(conversation.pk))
    # The 500s the issue found, always among the examples.
    @example(("post", messages, "[" * 100_000 + "]" * 100_000, "application/json"))
    @example(("post", messages, content, "text/event-stream"))
    @example(("post", messages, content, "application/json"))
    @example(("post", "/api/conversations", title, "application/json"))
    @example(("patch", f"/api/conversations/{conversation.pk}", title, "application/json"))
    @example(("get", "/sidebar/?offset=" + "9" * 20, None, "application/json"))
    @example(("post", "/api/memory/search", '{"query": "\\ud800"}', "application/json"))
    @example(("post", "/api/memory/add", '{"content": "\\ud800"}', "application/json"))
    @example(("post", "/api/memory/consistency", '{"statement": "\\ud800"}', "application/json"))
    def one(request):
        method, path, body, accept = request
        kwargs = {"HTTP_ACCEPT": accept}
        if body is not None and method != "get":
            kwargs.update(data=body, content_type="application/json")
        response = getattr(alice_client, method)(path, **kwargs)
        if response.streaming:
            # The whole SSE stream, to its end (iterating the response reads an async stream
            # too; its streaming_content would be an async iterator here).
            b"".join(response)
        assert response.status_code < 500, (path, response.status_code)
        if path.startswith("/api/") and not response.streaming and response.status_code != 204:
            assert isinstance(response.json(), dict)
        if response.status_code == 400:
            field = _field_named(path, response)
            # A field the client named "" is named "" back; any other refusal names one.
            named = isinstance(field, str) and (field or '"": ' in (body or ""))
            assert named, (path, response.content[:300])
            fields[field] += 1
        statuses[response.status_code] += 1

    one()
    _server_untouched(memory_server, pid, connections, bob, memory_id)
    # The examples reached both sides of every edge: refusals naming their field, and
    # requests that got through to the real work (a turn, a memory call).
    assert statuses[400] and (statuses[200] + statuses[201]), statuses
    assert {"body", "content", "offset", "limit", "query"} <= set(fields), fields


# --- WebSocket ---------------------------------------------------------------------------

PROBE = json.dumps({"action": "are-you-there"})  # answered with an error frame, always
ANSWERED = ("Unknown action.", "Wait for the answer to finish")
# Frames that begin a turn: the user's message appended, a failed answer removed for a
# retry, the answer begun (the turn state goes busy).
TURN_STARTS = ('hx-swap-oob="beforeend:#messages"', 'hx-swap-oob="delete"', 'data-busy="1"')
FRAME_WAIT = 60  # seconds: a generous bound on one frame on a busy machine, never reached
_frames = st.one_of(
    st.builds(lambda c: json.dumps({"content": c}, allow_nan=True), _field("content")),
    st.builds(lambda v: json.dumps(v, allow_nan=True), _values),
    st.builds(
        lambda a, m, c: json.dumps({"action": a, "message_id": m, "content": c}, allow_nan=True),
        st.sampled_from(["send", "retry", "stop", None, "", "SEND"]) | _text,
        st.integers(1, 50) | _values,
        _field("content"),
    ),
    st.sampled_from(RAW_BODIES),
)


async def _exchange(user, conversation, frame: str) -> list[str]:
    """Send `frame`, then a probe; return every frame until the probe is answered (and any
    turn the frame started is over). A closed socket or a crash raises."""
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    connected, _ = await communicator.connect()
    assert connected
    # send_input: send_to refuses an empty frame, which a client may well send.
    await communicator.send_input({"type": "websocket.receive", "text": frame})
    await communicator.send_to(text_data=PROBE)
    received: list[str] = []
    while not (_probe_answered(received) and _no_turn_running(received)):
        received.append(await communicator.receive_from(timeout=FRAME_WAIT))
    # Leaving mid-turn would leave its question unanswered: the next connection would
    # answer it first and refuse the next example's message ("Wait for the answer").
    await communicator.disconnect()
    return received


def _probe_answered(received: list[str]) -> bool:
    return any(a in f for f in received for a in ANSWERED)


def _no_turn_running(received: list[str]) -> bool:
    """No turn started (a question shown, a failed answer removed for a retry, an answer
    begun), or the last one is over."""
    started = [i for i, f in enumerate(received) if any(m in f for m in TURN_STARTS)]
    over = [i for i, f in enumerate(received) if 'data-busy="0"' in f]
    return not started or bool(over) and over[-1] > started[-1]


# What an error frame may say: the field it names (a frame that is no JSON object names
# the body), or a sentence about the action itself.
REFUSALS = re.compile(
    r"That message could not be read: body .+\.|Content .+\.|Message_id .+\.|Unknown action\."
    r"|Wait for the answer to finish, or press Stop\."
)
_ERROR = re.compile(r'<p class="flash">(.*?)</p>', re.S)


def test_it_answers_every_websocket_frame_and_stays_open(memory_server, alice, bob, fake_anthropic):
    conversation = Conversation.objects.create(user=alice, title="Fuzzed frames")
    memory_id = _earlier_memory(bob)
    (pid,) = memory_server.server_pids()
    connections = memory_server.client.connections
    outcomes: Counter[str] = Counter()

    @stable_examples(FRAME_EXAMPLES)
    @given(frame=_frames)
    # The 1011 closes the issue found, always among the examples.
    @example('{"action": "retry", "message_id": Infinity}')
    @example('{"action": "retry", "message_id": "\\ud800"}')
    @example('{"action": "retry", "message_id": ' + "[" * 50 + "]" * 50 + "}")
    @example('{"content": "\\ud800"}')
    def one(frame):
        # A closed socket (1011) or a crash raises in _exchange: the probe gets no answer.
        received = async_to_sync(_exchange)(alice, conversation, frame)
        errors = [html.unescape(e) for f in received for e in _ERROR.findall(f)]
        for error in errors:
            assert REFUSALS.fullmatch(error), (frame[:200], error)
        answered = any("answer_started" in f or 'data-busy="1"' in f for f in received)
        outcomes["answered" if answered else "refused"] += 1

    one()
    _server_untouched(memory_server, pid, connections, bob, memory_id)
    assert outcomes["answered"] and outcomes["refused"], outcomes
