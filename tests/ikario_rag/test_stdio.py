"""The server as a real subprocess: protocol hygiene, kill -9, reindex, the lock, HTTP.

One stdio server (`shared_server`, spawned as Claude Desktop does) serves every test that does
not need a process of its own; what a test checks after a restart is read
through a fresh server object in this process (same code, same index, the session's model).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ikario_rag.app import build_server
from ikario_rag.runtime import MemoryHost, Settings
from tests.ikario_rag.conftest import READY_WAIT, InMemoryClient, call
from tests.ikario_rag.stdio import ANSWER_WAIT, ROOT
from tests.net import serve_on_a_free_port


@pytest.fixture
def reopen(embedder):
    """A new server object on an existing index directory (what a restart runs)."""
    hosts: list[MemoryHost] = []

    def open_(index_dir: Path) -> InMemoryClient:
        host = MemoryHost(Settings(index_dir=index_dir, embedder=embedder))
        host.acquire().memory().wait_ready(READY_WAIT)
        hosts.append(host)
        return InMemoryClient(build_server(host))

    yield open_
    for host in hosts:
        host.release()


def test_it_speaks_only_json_rpc_on_stdout(shared_server):
    server = shared_server
    listed = server.request("tools/list", {})
    assert "search_memories" in {t["name"] for t in listed["result"]["tools"]}
    added = server.tool(
        "add_thought",
        content="Le chat de Mickael s'appelle Pixel",
        context={"kind": "fact"},
        namespace="hygiene",
    )
    found = server.tool("search_memories", query="Pixel le chat", namespace="hygiene")
    assert found["results"][0]["id"] == added["id"]
    error, message = server.call("search_memories", query="")
    assert error and "query" in message
    assert server.not_json_rpc == []
    assert server.stdout_lines


def test_it_answers_initialize_with_its_name_and_tools(spawn):
    server = spawn()
    answer = server.initialize()
    assert answer["result"]["serverInfo"]["name"] == "ikario_rag"
    assert "tools" in answer["result"]["capabilities"]
    assert server.tool("memory_stats")["total_memories"] == 0
    assert server.close() == 0
    assert server.not_json_rpc == []


async def test_it_keeps_everything_after_kill_9_and_finds_it_after_restart(spawn, reopen):
    first = spawn(module=True)
    first.initialize()
    one = first.tool("add_thought", content="David habite à Ordizan", context={"kind": "fact"})
    batch = first.tool(
        "add_thoughts",
        items=[
            {"content": "Mickael part en Grèce en février"},
            {"content": "Le projet Ikario démarre en mars", "context": {"kind": "note"}},
        ],
    )
    first.kill()  # kill -9: no shutdown code runs
    second = reopen(first.index_dir)
    _, got = await call(second, "get_memories", ids=[one["id"], *batch["ids"]])
    assert [m["content"] for m in got["memories"]] == [
        "David habite à Ordizan",
        "Mickael part en Grèce en février",
        "Le projet Ikario démarre en mars",
    ]
    for query, wanted in (
        ("Ordizan", one["id"]),
        ("voyage en Grèce", batch["ids"][0]),
        ("projet Ikario", batch["ids"][1]),
    ):
        _, found = await call(second, "search_memories", query=query, mode="semantic")
        assert found["results"][0]["id"] == wanted


async def test_it_rebuilds_vectors_with_the_reindex_command(tmp_path, make_host, reopen, capsys):
    from ikario_rag import cli

    index_dir = tmp_path / "index"
    host = make_host(index_dir)
    _, added = await call(
        InMemoryClient(build_server(host)), "add_thought", content="La clé est sous le pot"
    )
    host.release()
    # The vectors are lost: `python -m ikario_rag reindex` is cli.main, run here in-process.
    shutil.rmtree(index_dir / "chroma")

    assert cli.main(["reindex", "--index-dir", str(index_dir)]) == 0

    printed = capsys.readouterr()
    assert "reindexed 1 memories" in printed.err
    assert printed.out == ""
    client = reopen(index_dir)
    _, found = await call(client, "search_memories", query="où est la clé", mode="semantic")
    assert found["results"][0]["id"] == added["id"]


async def test_it_serves_the_same_tools_over_streamable_http(tmp_path):
    from ikario_rag.client import MemorySession, http_streams

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http"]
            + ["--port", str(port)],
            cwd=ROOT,
            env={
                **os.environ,
                "IKARIO_INDEX_DIR": str(tmp_path / "index"),
                "HF_HUB_OFFLINE": "1",
                "IKARIO_TOKEN": "the-token",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    process, port = serve_on_a_free_port(start, timeout=ANSWER_WAIT)
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            http_streams(url, token="the-token") as streams,
            MemorySession(*streams) as client,
        ):
            await client.initialize()
            listed = await client.list_tools()
            stats = await client.call_tool("memory_stats", {})
        assert "add_thought" in {t.name for t in listed.tools}
        assert stats.structured_content["total_memories"] == 0
    finally:
        process.kill()
        process.wait(ANSWER_WAIT)


def test_it_keeps_vectors_in_a_chroma_server_when_chroma_host_is_set(
    tmp_path, embedder, monkeypatch
):
    import shutil

    from ikario_rag import search
    from ikario_rag.curation import restore, restored_item
    from ikario_rag.memory import Memory
    from ikario_rag.validate import new_memory

    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [chroma, "run", "--path", str(tmp_path / "chroma-server"), "--port", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
        )

    server, port = serve_on_a_free_port(start, timeout=ANSWER_WAIT)
    try:
        monkeypatch.setenv("CHROMA_HOST", "127.0.0.1")
        monkeypatch.setenv("CHROMA_PORT", str(port))
        memory = Memory(tmp_path / "index", embedder=embedder)
        memory.repair()
        added = memory.add("n", [new_memory("Le vélo de Nora est rouge", None)])[0]
        found = search.search(memory, "n", "vélo rouge", 5, search.Filters(), "semantic")
        assert found["results"][0]["id"] == added["id"]
        # The vectors live in the server, not in the index directory.
        assert not (tmp_path / "index" / "chroma").exists()
        assert (tmp_path / "chroma-server").exists()

        # Another index on the same server takes this user over (a move between memory
        # servers keeps the ids): once the old copy is deleted, the new one is still found.
        other = Memory(tmp_path / "other-index", embedder=embedder)
        item = restored_item({"content": "Le vélo de Nora est rouge", "id": added["id"]}, "")
        assert restore(other, "n", [item])[0]["id"] == added["id"]
        other.repair()
        memory.delete("n", [added["id"]])
        memory.repair()
        found = search.search(other, "n", "vélo rouge", 5, search.Filters(), "semantic")
        assert [hit["id"] for hit in found["results"]] == [added["id"]]
        other.close()
        memory.close()
    finally:
        server.kill()
        server.wait(ANSWER_WAIT)


WRITER_SCRIPT = """
import os, sys, anyio
from ikario_rag.transport import PipeWriter

async def main():
    async with PipeWriter.of_stdout() as stdout:
        assert stdout is not None, "stdout is a pipe: the loop's writer"
        print("stray print", flush=True)
        os.write(1, b"stray write\\n")
        await stdout.write('{"jsonrpc": "2.0", "id": 1, "result": {}}\\n')
        await stdout.flush()
    print("after serving", flush=True)

anyio.run(main)
"""


def test_it_writes_only_its_messages_to_a_stdout_pipe_and_strays_to_stderr():
    # The server writes its answers on the event loop (ikario_rag/transport.py): whatever
    # else prints to fd 1 meanwhile goes to stderr, not into the JSON-RPC stream.
    done = subprocess.run(
        [sys.executable, "-c", WRITER_SCRIPT],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=ANSWER_WAIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        '{"jsonrpc": "2.0", "id": 1, "result": {}}',
        "after serving",
    ]
    assert "stray print" in done.stderr and "stray write" in done.stderr
