"""The HTTP transport's credential, its namespace limits, Host checks, and private files.

One real `python -m ikario_rag --transport streamable-http` (module-scoped) with two
tokens: FULL may use every namespace, LIMITED only "user-1" and those starting "team-".
A request without a token is what any other local user's process could send.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import httpx2
import pytest

from ikario_rag.access import BadCredentials, Credentials
from ikario_rag.client import MemorySession, http_streams
from tests.ikario_rag.stdio import ANSWER_WAIT, ROOT
from tests.net import free_port, serve_on_a_free_port, stop

FULL = "full-token-0123456789abcdef"
LIMITED = "limited-token-0123456789abcdef"
TOKENS = json.dumps({FULL: "*", LIMITED: ["user-1", "team-*"]})
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "intruder", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream"}


def start_server(tmp_path: Path, *args: str, env: dict | None = None):
    log = tmp_path / "server.log"
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})}
    environment.pop("IKARIO_TOKEN", None)
    environment.pop("IKARIO_TOKENS", None)
    environment.update(env or {})

    def start(port: int) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http"]
            + ["--port", str(port), "--index-dir", str(tmp_path / "index"), *args],
            cwd=ROOT,
            env=environment,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )

    try:
        process, port = serve_on_a_free_port(start, timeout=ANSWER_WAIT)
    except AssertionError as exc:
        raise AssertionError(log.read_text()) from exc
    return process, port, log


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("access")
    process, port, log = start_server(tmp_path, env={"IKARIO_TOKENS": TOKENS})
    yield f"http://127.0.0.1:{port}/mcp", log, tmp_path / "index"
    stop(process)


async def call(url: str, token: str, tool: str, **arguments):
    async with (
        http_streams(url, token=token) as (read, write),
        MemorySession(read, write) as session,
    ):
        await session.initialize()
        result = await session.call_tool(tool, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    return result.is_error, (text if result.is_error else result.structured_content)


def post(url: str, headers: dict | None = None, body: dict | None = None) -> httpx2.Response:
    return httpx2.post(
        url, json=body or INITIALIZE, headers={**MCP_HEADERS, **(headers or {})}, timeout=30
    )


# -- the credential ------------------------------------------------------------------------


def test_a_request_without_a_token_or_with_a_wrong_one_is_refused_and_logged(server):
    url, log, _ = server

    missing = post(url)
    wrong = post(url, {"Authorization": "Bearer not-the-token"})
    almost = post(url, {"Authorization": f"Bearer {FULL[:-1]}x"})

    assert (missing.status_code, wrong.status_code, almost.status_code) == (401, 401, 401)
    said = log.read_text()
    assert said.count("refused POST /mcp from 127.0.0.1") >= 3
    assert "not-the-token" not in said and FULL[:-1] not in said


async def test_no_tool_answers_without_the_token(server):
    url, _, _ = server
    # What another local user ran against the old server: stats, a private note, a reset.
    for body in (
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_stats"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "forget_all", "arguments": {"namespace": "user-1"}},
        },
    ):
        assert post(url, body=body).status_code == 401


async def test_the_right_token_is_served(server):
    url, _, _ = server
    failed, added = await call(url, FULL, "add_thought", content="Alice's note", namespace="user-2")
    assert not failed, added
    failed, listed = await call(url, FULL, "list_memories", namespace="user-2")
    assert [m["content"] for m in listed["memories"]] == ["Alice's note"]


async def test_a_limited_token_reaches_only_its_namespaces(server):
    url, log, _ = server
    await call(url, FULL, "add_thought", content="Bob's secret", namespace="user-3")
    failed, added = await call(url, LIMITED, "add_thought", content="mine", namespace="user-1")
    assert not failed, added
    failed, added = await call(url, LIMITED, "add_thought", content="ours", namespace="team-a")
    assert not failed, added

    for tool, arguments in (
        ("list_memories", {"namespace": "user-3"}),
        ("search_memories", {"query": "secret", "namespace": "user-3"}),
        ("forget_all", {"namespace": "user-3", "confirm": "user-3"}),
        ("memory_stats", {"namespace": "user-3"}),
        ("add_thought", {"content": "x", "namespace": " user-3 "}),
        ("get_recent_memories", {}),  # the "default" namespace
        ("list_memories", {"namespace": "user-10"}),  # a name, not a prefix
    ):
        failed, said = await call(url, LIMITED, tool, **arguments)
        assert failed, (tool, said)
        assert "not allowed for this credential" in said, said

    failed, listed = await call(url, FULL, "list_memories", namespace="user-3")
    assert [m["content"] for m in listed["memories"]] == ["Bob's secret"]
    assert "refused forget_all on namespace 'user-3' for IKARIO_TOKENS #2" in log.read_text()


async def test_memory_stats_counts_only_the_namespaces_of_a_limited_token(server):
    url, _, _ = server
    await call(url, FULL, "add_thought", content="elsewhere", namespace="other-ns")
    _, everything = await call(url, FULL, "memory_stats")
    _, mine = await call(url, LIMITED, "memory_stats")
    _, user_1 = await call(url, FULL, "memory_stats", namespace="user-1")
    _, team = await call(url, FULL, "memory_stats", namespace="team-a")

    assert mine["total_memories"] == user_1["total_memories"] + team["total_memories"]
    assert mine["total_memories"] < everything["total_memories"]
    # Nothing about the whole index: its size, its sessions, its pending vectors.
    _, one = await call(url, LIMITED, "memory_stats", namespace="user-1")
    assert everything["index_bytes"] > 0 and everything["health"]["http_sessions"] >= 1
    assert mine["index_bytes"] is None and one["index_bytes"] is None
    assert mine["health"]["http_sessions"] is None and mine["health"]["unindexed"] is None
    assert one["total_memories"] == user_1["total_memories"]


async def test_every_tool_with_a_namespace_checks_it(server):
    from ikario_rag import tools

    url, _, _ = server
    arguments = {
        "add_thought": {"content": "x"},
        "add_thoughts": {"items": [{"content": "x"}]},
        "search_memories": {"query": "x"},
        "trace_concept_evolution": {"concept": "x"},
        "check_consistency": {"statement": "x"},
        "get_memories": {"ids": ["x"]},
        "delete_memory": {"id": "x"},
        "forget": {"topic": "x"},
        "update_memory": {"id": "x", "content": "y"},
        "restore_memories": {"memories": [{"content": "x"}]},
        "forget_all": {"confirm": "user-3"},
    }
    checked = [fn.__name__ for fn in tools.TOOLS if "namespace" in fn.__code__.co_varnames]
    assert len(checked) == len(tools.TOOLS)
    for name in checked:
        failed, said = await call(url, LIMITED, name, **arguments.get(name, {}), namespace="user-3")
        assert failed and "not allowed for this credential" in said, (name, said)


def test_the_credentials_are_read_from_the_environment():
    both = Credentials.from_environ({"IKARIO_TOKEN": "a", "IKARIO_TOKENS": '{"b": ["n", "p-*"]}'})
    assert both.grant_for("a").everything
    grant = both.grant_for("b")
    assert grant.allows("n") and grant.allows("p-1") and not grant.allows("n2")
    assert both.grant_for("c") is None and both.grant_for("") is None
    assert not Credentials.from_environ({})
    for bad in ('["s3cr3t"]', "{s3cr3t", '{"s3cr3t": 3}', '{"s3cr3t": [""]}', '{" ": "*"}'):
        with pytest.raises(BadCredentials) as raised:
            Credentials.from_environ({"IKARIO_TOKENS": bad})
        assert "s3cr3t" not in str(raised.value)


# -- where it listens ------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])  # noqa: S104
def test_it_does_not_start_without_a_credential(tmp_path, host):
    environment = {k: v for k, v in os.environ.items() if not k.startswith("IKARIO_TOKEN")}
    done = subprocess.run(
        [sys.executable, "-m", "ikario_rag", "--transport", "streamable-http", "--host", host]
        + ["--port", str(free_port()), "--index-dir", str(tmp_path / "index")],
        cwd=ROOT,
        env={**environment, "HF_HUB_OFFLINE": "1"},
        capture_output=True,
        text=True,
        # A bound on a server that serves instead of refusing (it exits before any import).
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs a credential: set IKARIO_TOKEN" in done.stderr
    assert not (tmp_path / "index").exists()


def test_on_every_address_it_still_checks_the_host_header(tmp_path):
    process, port, log = start_server(
        tmp_path,
        "--host",
        "0.0.0.0",  # noqa: S104
        env={"IKARIO_TOKEN": FULL, "IKARIO_ALLOWED_HOSTS": "memory.internal"},
    )
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        token = {"Authorization": f"Bearer {FULL}"}
        rebound = post(url, {**token, "Host": "attacker.example"})
        foreign = post(url, {**token, "Origin": "http://attacker.example"})
        named = post(url, {**token, "Host": f"memory.internal:{port}"})
        loopback = post(url, token)
    finally:
        stop(process)
    assert rebound.status_code == 421
    assert foreign.status_code == 403
    assert named.status_code == 200, named.text
    assert loopback.status_code == 200, loopback.text
    said = log.read_text()
    assert "a Host that is not this server's (HTTP 421)" in said
    assert "a forbidden Origin (HTTP 403)" in said


# -- private files ---------------------------------------------------------------------------


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_index_is_readable_by_its_user_only(server):
    _, _, index = server
    assert _mode(index) == 0o700
    for name in ("memories.sqlite3", "server.lock"):
        assert _mode(index / name) == 0o600, name
    exposed = [str(p.relative_to(index)) for p in index.rglob("*") if p.stat().st_mode & 0o077]
    assert exposed == []


def test_an_index_made_before_is_made_private_at_start(tmp_path, spawn):
    index = tmp_path / "index"
    first = spawn(index_dir=index)
    first.initialize()
    first.close()
    # As an index made before was: open to every local user.
    for path in (index, *index.rglob("*")):
        os.chmod(path, 0o755 if path.is_dir() else 0o644)  # noqa: S103

    second = spawn(index_dir=index)
    second.initialize()
    try:
        assert _mode(index) == 0o700
        assert _mode(index / "memories.sqlite3") == 0o600
        exposed = [str(p) for p in index.rglob("*") if p.lstat().st_mode & 0o077]
        assert exposed == []
    finally:
        second.close()
