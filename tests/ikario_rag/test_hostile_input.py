"""Hostile input at the MCP edge never breaks the server or its connection (real stdio).

Every answer is a one-line tool error naming the argument, or a result over normalised
input (lone surrogates become U+FFFD, NUL bytes are dropped); the next call on the same
connection works. Requests are written as raw JSON lines (json.dumps escapes a lone
surrogate as "\\ud800"), which is what reaches the server whatever the client library.
"""

from __future__ import annotations

import json
import os
import sys

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ikario_rag import contract
from ikario_rag.client import MemorySession, wire_safe
from tests.ikario_rag.conftest import stable_examples
from tests.ikario_rag.stdio import ROOT, SERVER

# The arguments of every tool (docs/MEMORY_TOOLS.md), and those without a default.
TOOLS = {
    "add_thought": ["content", "context", "namespace"],
    "add_thoughts": ["items", "namespace"],
    "search_memories": [
        "query",
        "n_results",
        "filter_category",
        "kinds",
        "tags",
        "date_from",
        "date_to",
        "mode",
        "namespace",
    ],
    "trace_concept_evolution": ["concept", "limit", "namespace"],
    "check_consistency": ["statement", "namespace"],
    "get_memories": ["ids", "namespace"],
    "get_recent_memories": ["limit", "kinds", "namespace"],
    "delete_memory": ["id", "reason", "namespace"],
    "forget": ["topic", "min_score", "dry_run", "namespace"],
    "memory_stats": ["namespace"],
}
REQUIRED = {
    "add_thought": {"content"},
    "add_thoughts": {"items"},
    "search_memories": {"query"},
    "trace_concept_evolution": {"concept"},
    "check_consistency": {"statement"},
    "get_memories": {"ids"},
    "delete_memory": {"id"},
    "forget": {"topic"},
}
FUZZ = "fuzz"


def encode(value) -> str:
    """JSON the way a careless client writes it: NaN, huge integers, any depth allowed."""
    extras: dict[str, str] = {}

    def mark(item):
        if isinstance(item, Deep):
            key = f"@@deep{len(extras)}@@"
            extras[f'"{key}"'] = "[" * item.depth + "]" * item.depth
            return key
        if isinstance(item, Huge):
            key = f"@@int{len(extras)}@@"
            extras[f'"{key}"'] = "9" * 5000
            return key
        if isinstance(item, dict):
            return {k: mark(v) for k, v in item.items()}
        if isinstance(item, list):
            return [mark(v) for v in item]
        return item

    text = json.dumps(mark(value), allow_nan=True)
    for key, raw in extras.items():
        text = text.replace(key, raw)
    return text


class Huge:
    """An integer literal of 5,000 digits (more than Python converts by default)."""

    def __repr__(self) -> str:
        return "Huge()"


class Deep:
    def __init__(self, depth: int) -> None:
        self.depth = depth

    def __repr__(self) -> str:
        return f"Deep({self.depth})"


def raw_call(server, tool: str, arguments: dict) -> dict:
    """Send one tools/call line; return the JSON-RPC answer to it."""
    server.next_id += 1
    request_id = server.next_id
    params = encode({"name": tool, "arguments": arguments})
    server.send_line(
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", "params": {params}}}'
    )
    return server.answer(request_id)


def assert_answered(server, tool: str, arguments: dict, answer: dict) -> None:
    assert server.process.poll() is None, server.stderr()[-2000:]
    assert server.not_json_rpc == []
    result = answer.get("result")
    assert result is not None, answer
    text = result["content"][0]["text"]
    if result.get("isError"):
        assert "\n" not in text.strip(), text
        named = set(arguments) | REQUIRED.get(tool, set())
        if tool == "get_memories":
            named.add("unknown memory id")  # the answer for well-formed ids that do not exist
        assert any(name in text for name in named), (text, sorted(named))
        assert "internal error" not in text and "Traceback" not in text, text


def assert_still_searching(server) -> None:
    found = server.tool("search_memories", query="Lyon pluie", namespace=FUZZ)
    assert found["results"][0]["content"] == "Il pleut sur Lyon"


@pytest.fixture(scope="module")
def fuzzed(shared_server):
    shared_server.tool("add_thought", content="Il pleut sur Lyon", namespace=FUZZ)
    return shared_server


HOSTILE_STRINGS = [
    "\ud800",
    "a\udfffb",
    "\ud83d",
    "nul\x00byte",
    "\x00",
    "x" * 100_000,
    "<private>secret</private>",
]


def arguments_with(tool: str, name: str, bad) -> dict:
    """Valid arguments for `tool` except `name`, which carries `bad` where a string goes."""
    arguments = {n: "valid" for n in REQUIRED.get(tool, ())}
    arguments["ids"] = ["valid"] if tool == "get_memories" else None
    arguments["items"] = [{"content": "valid"}] if tool == "add_thoughts" else None
    arguments = {k: v for k, v in arguments.items() if v is not None}
    arguments["namespace"] = FUZZ
    if name == "context":
        arguments[name] = {"date": bad, "source": bad, "ttl": bad, "tags": [bad], "kind": bad}
    elif name == "items":
        arguments[name] = [{"content": bad, "context": {"subjects": [bad]}}]
    elif name in ("ids", "kinds", "tags"):
        arguments[name] = [bad]
    else:
        arguments[name] = bad
    return arguments


def test_it_answers_hostile_strings_in_every_argument(fuzzed):
    for tool, names in TOOLS.items():
        for name in names:
            for bad in HOSTILE_STRINGS:
                arguments = arguments_with(tool, name, bad)
                assert_answered(fuzzed, tool, arguments, raw_call(fuzzed, tool, arguments))
    assert_still_searching(fuzzed)


@pytest.mark.parametrize(
    "value",
    [10**30, -(10**30), Huge(), 1e308, float("nan"), float("inf"), float("-inf"), Deep(50)]
    + [Deep(5000), True, None, [], {}, [[["a"]]], {"$ref": "#"}],
    ids=lambda v: repr(v)[:20],
)
def test_it_answers_hostile_values_in_every_argument(fuzzed, value):
    for tool, names in TOOLS.items():
        for name in names:
            arguments = arguments_with(tool, name, "valid")
            arguments[name] = value
            assert_answered(fuzzed, tool, arguments, raw_call(fuzzed, tool, arguments))
    arguments = {"content": "valid", "context": dict.fromkeys(contract.CONTEXT_FIELDS, value)}
    assert_answered(fuzzed, "add_thought", arguments, raw_call(fuzzed, "add_thought", arguments))
    assert_still_searching(fuzzed)


def test_it_answers_lines_that_are_not_json_rpc_and_keeps_the_connection(fuzzed):
    fuzzed.send_line("this is not JSON")
    fuzzed.send_line('{"jsonrpc": "2.0", "id": "odd", "method": "tools/call", "params": "x"}')
    fuzzed.send_line("[1, 2, 3]")
    assert fuzzed.answer("odd")["error"]["code"] == -32600
    assert fuzzed.process.poll() is None
    assert_still_searching(fuzzed)


async def test_it_survives_what_kills_an_sdk_client_and_memory_session_sends_it(tmp_path):
    """A lone surrogate dies in the SDK client's own serialisation, before anything is sent:
    the server never sees it. MemorySession makes the same call sendable."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    from pydantic_core import PydanticSerializationError

    params = StdioServerParameters(
        command=sys.executable,
        args=[str(SERVER)],
        env={**os.environ, "IKARIO_INDEX_DIR": str(tmp_path / "index"), "HF_HUB_OFFLINE": "1"},
        cwd=str(ROOT),
    )
    with pytest.raises(BaseException) as died:  # noqa: B017 -- an ExceptionGroup from anyio
        async with stdio_client(params) as streams, ClientSession(*streams) as session:
            await session.initialize()
            await session.call_tool("memory_stats", {"namespace": "\ud800"})
    assert died.group_contains(PydanticSerializationError)
    with anyio.fail_after(600):
        async with stdio_client(params) as streams, MemorySession(*streams) as session:
            await session.initialize()
            stats = await session.call_tool("memory_stats", {"namespace": "a\ud800"})
            missing = await session.call_tool("get_memories", {"ids": ["\ud800"]})
            again = await session.call_tool("memory_stats", {})
    assert stats.structured_content["namespace"] == "a\ufffd"
    assert missing.is_error and "unknown memory id" in missing.content[0].text
    assert again.structured_content["total_memories"] == 0


def test_memory_session_makes_any_argument_sendable():
    deep = []
    for _ in range(5000):
        deep = [deep]
    safe = wire_safe({"a\ud800": ["\udfff", deep, {"k": 10**30}], "n": float("nan")})
    assert list(safe) == ["a\ufffd", "n"]
    assert safe["a\ufffd"][0] == "\ufffd" and safe["a\ufffd"][2] == {"k": 10**30}
    json.dumps(safe)  # nothing left that a serialiser refuses (depth cut to 32)


# -- property: random hostile arguments to every tool ---------------------------------------

_hostile_text = st.one_of(
    st.text(
        alphabet=st.sampled_from(["\ud800", "\udc00", "\x00", "\x1f", "a", "é", "<", ">", " "]),
        max_size=30,
    ),
    st.text(max_size=50),
    st.integers(1_000, 120_000).map(lambda n: "z" * n),
    st.just("<private>hidden</private>"),
)
_hostile_scalar = st.one_of(
    _hostile_text,
    st.integers(),
    st.sampled_from([10**30, -(10**30), 2**63]),
    st.builds(Huge),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.integers(33, 20_000).map(Deep),
)
_hostile = st.recursive(
    _hostile_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(_hostile_text, inner, max_size=4)
    ),
    max_leaves=8,
)


@st.composite
def _call(draw):
    tool = draw(st.sampled_from(sorted(TOOLS)))
    arguments = {}
    for name in TOOLS[tool]:
        if name in REQUIRED.get(tool, ()) or draw(st.booleans()):
            if name == "context":
                fields = draw(st.lists(st.sampled_from(contract.CONTEXT_FIELDS), max_size=4))
                arguments[name] = {f: draw(_hostile) for f in fields}
            elif name == "items":
                arguments[name] = draw(
                    st.lists(st.fixed_dictionaries({"content": _hostile}), max_size=3)
                )
            else:
                arguments[name] = draw(_hostile)
    if draw(st.booleans()):
        arguments[draw(_hostile_text)] = draw(_hostile)
    if "namespace" not in arguments:
        arguments["namespace"] = FUZZ
    return tool, arguments


@stable_examples(120)
@given(call=_call())
def test_it_never_dies_on_random_hostile_arguments(fuzzed, call):
    tool, arguments = call
    assert_answered(fuzzed, tool, arguments, raw_call(fuzzed, tool, arguments))


def test_it_still_searches_after_the_random_hostile_arguments(fuzzed):
    assert_still_searching(fuzzed)
