"""The server as a real subprocess over stdio: protocol hygiene, restart after kill -9, lock.

These spawn `python ikario_rag/server.py` / `python -m ikario_rag` the way the web app does,
speaking raw newline-delimited JSON-RPC so that every byte on stdout is checked.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.net import free_port, wait_for_port

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "ikario_rag" / "server.py"


class StdioServer:
    """A server subprocess and a minimal JSON-RPC client over its stdin/stdout."""

    def __init__(self, index_dir: Path, *args: str, module: bool = False) -> None:
        env = {**os.environ, "IKARIO_INDEX_DIR": str(index_dir), "HF_HUB_OFFLINE": "1"}
        command = [sys.executable, "-m", "ikario_rag"] if module else [sys.executable, str(SERVER)]
        self.process = subprocess.Popen(
            [*command, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            # The script path alone must work from any directory; -m needs the repository.
            cwd=str(ROOT) if module else "/",
            text=True,
        )
        self.next_id = 0
        self.stdout_lines: list[str] = []

    def request(self, method: str, params: dict, timeout: float = 120.0) -> dict:
        self.next_id += 1
        wanted = self.next_id
        self._send({"jsonrpc": "2.0", "id": wanted, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                raise AssertionError(f"server closed stdout; stderr: {self.stderr_tail()}")
            self.stdout_lines.append(line)
            message = json.loads(line)  # anything but JSON-RPC on stdout fails here
            assert message["jsonrpc"] == "2.0"
            if message.get("id") == wanted:
                return message
        raise AssertionError(f"no answer to {method} within {timeout}s")

    def _send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def initialize(self) -> dict:
        answer = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "ikario-tests", "version": "1"},
            },
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer

    def tool(self, name: str, **arguments) -> dict:
        answer = self.request("tools/call", {"name": name, "arguments": arguments})
        result = answer["result"]
        assert not result.get("isError"), result
        assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
        return result["structuredContent"]

    def stderr_tail(self) -> str:
        return self.process.stderr.read()[-2000:] if self.process.poll() is not None else ""

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            stream.close()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture
def spawn(tmp_path):
    started: list[StdioServer] = []

    def start(*args: str, module: bool = False, index_dir: Path | None = None) -> StdioServer:
        server = StdioServer(index_dir or tmp_path / "index", *args, module=module)
        started.append(server)
        return server

    yield start
    for server in started:
        if server.process.poll() is None:
            server.kill()


def test_it_answers_initialize_quickly_and_speaks_only_json_rpc_on_stdout(spawn):
    server = spawn()
    started = time.monotonic()
    answer = server.initialize()
    assert time.monotonic() - started < 2.0
    assert answer["result"]["serverInfo"]["name"] == "ikario_rag"
    listed = server.request("tools/list", {})
    assert "search_memories" in {t["name"] for t in listed["result"]["tools"]}
    added = server.tool(
        "add_thought", content="Le chat de Mickael s'appelle Pixel", context={"kind": "fact"}
    )
    found = server.tool("search_memories", query="Pixel le chat")
    assert found["results"][0]["id"] == added["id"]
    bad = server.request("tools/call", {"name": "search_memories", "arguments": {"query": ""}})
    assert bad["result"]["isError"] is True
    assert "query" in bad["result"]["content"][0]["text"]
    server.close()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in server.stdout_lines)


def test_it_keeps_everything_after_kill_9_and_finds_it_after_restart(spawn, tmp_path):
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
    second = spawn(module=True)
    second.initialize()
    got = second.tool("get_memories", ids=[one["id"], *batch["ids"]])
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
        found = second.tool("search_memories", query=query, mode="semantic")
        assert found["results"][0]["id"] == wanted
    second.close()


def test_it_rebuilds_vectors_with_the_reindex_command(spawn, tmp_path):
    server = spawn()
    server.initialize()
    added = server.tool("add_thought", content="La clé est sous le pot de fleurs")
    server.close()
    done = subprocess.run(
        [sys.executable, "-m", "ikario_rag", "reindex", "--index-dir", str(tmp_path / "index")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert "reindexed 1 memories" in done.stderr
    assert done.stdout == ""
    again = spawn()
    again.initialize()
    found = again.tool("search_memories", query="où est la clé", mode="semantic")
    assert found["results"][0]["id"] == added["id"]
    again.close()


def test_it_refuses_a_second_server_on_the_same_index_directory(spawn, tmp_path):
    first = spawn()
    first.initialize()
    started = time.monotonic()
    second = spawn()
    code = second.process.wait(30)
    assert time.monotonic() - started < 10
    assert code != 0
    message = second.process.stderr.read()
    assert "already in use" in message and str(tmp_path / "index") in message
    assert second.process.stdout.read() == ""
    # The first server is unaffected.
    assert first.tool("memory_stats")["total_memories"] == 0
    first.close()


async def test_it_serves_the_same_tools_over_streamable_http(tmp_path):
    from mcp import Client

    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "IKARIO_INDEX_DIR": str(tmp_path / "index"), "HF_HUB_OFFLINE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, timeout=30, process=process)
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            listed = await client.list_tools()
            stats = await client.call_tool("memory_stats", {})
        assert "add_thought" in {t.name for t in listed.tools}
        assert stats.structured_content["total_memories"] == 0
    finally:
        process.kill()
        process.wait(10)


def test_it_keeps_vectors_in_a_chroma_server_when_chroma_host_is_set(
    tmp_path, embedder, monkeypatch
):
    import shutil

    from ikario_rag import search
    from ikario_rag.memory import Memory
    from ikario_rag.validate import new_memory

    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    server = subprocess.Popen(
        [chroma, "run", "--path", str(tmp_path / "chroma-server"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    try:
        wait_for_port(port, timeout=30, process=server)
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
        memory.close()
    finally:
        server.kill()
        server.wait(10)
