"""Every tool publishes an outputSchema (ikario_rag/tool_results.py), and what it returns
validates against it, its structured content the same JSON as its text."""

from __future__ import annotations

import json

import jsonschema

from ikario_rag.tools import TOOLS

NS = "output-schemas"


def _listed(server) -> dict[str, dict]:
    return {t["name"]: t for t in server.request("tools/list", {})["result"]["tools"]}


def test_every_tool_has_an_output_schema_naming_its_fields(shared_server):
    tools = _listed(shared_server)
    assert set(tools) == {fn.__name__ for fn in TOOLS}
    for name, tool in tools.items():
        schema = tool.get("outputSchema")
        assert schema and schema["type"] == "object" and schema.get("properties"), name
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_call_returns_what_its_schema_says(shared_server):
    tools = _listed(shared_server)
    called: set[str] = set()

    def call(name: str, **arguments) -> dict:
        answer = shared_server.request("tools/call", {"name": name, "arguments": arguments})
        result = answer["result"]
        assert not result.get("isError"), (name, result)
        structured = result["structuredContent"]
        jsonschema.validate(structured, tools[name]["outputSchema"])
        # The same JSON as the text block, value for value (an int is not made a float).
        text = json.loads(result["content"][0]["text"])
        assert json.dumps(structured, sort_keys=True) == json.dumps(text, sort_keys=True)
        called.add(name)
        return structured

    fact = {"kind": "fact", "subjects": ["Ana"], "source": "conversation:1"}
    first = call("add_thought", content="Ana lives in Lyon", context=fact, namespace=NS)
    assert call("add_thought", content="Ana lives in Lyon", namespace=NS)["status"] == "duplicate"
    batch = call(
        "add_thoughts",
        items=[
            {"content": "Ana: we went skiing in the Alps", "context": {"kind": "conversation"}},
            {"content": "Ana plays the cello", "context": {"ttl": "7d", "tags": ["music"]}},
        ],
        namespace=NS,
    )
    found = call("search_memories", query="Lyon", n_results=3, namespace=NS)
    assert found["results"] and found["results"][0]["relevance_score"] > 0
    call("search_memories", query="skiing", mode="text", namespace=NS)
    call("trace_concept_evolution", concept="Lyon", namespace=NS)
    call("check_consistency", statement="Ana lives in Paris", namespace=NS)
    call("get_memories", ids=[first["id"], "unknown"], with_history=True, namespace=NS)
    call("get_recent_memories", limit=5, namespace=NS)
    edited = call(
        "update_memory", id=first["id"], content="Ana lives in Lyon, by the Rhône", namespace=NS
    )
    assert edited["status"] == "updated"
    call("get_memories", ids=[first["id"]], with_history=True, namespace=NS)
    page = call("list_memories", limit=10, namespace=NS)
    cello = next(m for m in page["memories"] if "cello" in m["content"])
    assert call("delete_memory", id=cello["id"], namespace=NS)["deleted"] is True
    call("restore_memories", memories=[cello], namespace=NS)
    call("forget", topic="cello", dry_run=True, namespace=NS)
    call("memory_stats", namespace=NS)
    call("memory_stats")
    assert call("forget_all", confirm=NS, namespace=NS)["deleted"] == 3
    assert batch["created"] == 2
    assert called == set(tools)
