"""docs/DEPLOY.md's "Past one machine" topology, really started (tests/fixtures/topology.py):
PostgreSQL, Redis, a Chroma server, two memory servers, two Daphnes and a worker on
loopback, production settings. What works across processes, then one fault at a time
under load, with what the users were promised counted afterwards from the stores.

Run by `make test-scale` (a few minutes: every part starts once for the module).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time

import httpx
import pytest
from websockets.sync.client import connect

from memory.client import shards
from tests.fixtures import scale_users
from tests.fixtures.topology import Topology
from tests.wait import wait_until

# The whole topology starts in the first test's set-up: a ceiling above the suite's default.
pytestmark = [pytest.mark.scale, pytest.mark.timeout(900)]

USERS = 8
SECONDS = 25.0
KILL_AT, DOWN_FOR = 8.0, 5.0


@pytest.fixture(scope="module")
def town():
    with Topology(memory_servers=2) as town:
        town.create_users(scale_users.user_names(USERS), scale_users.PASSWORD)
        yield town


def logged_in(town: Topology, web: int, name: str) -> scale_users.User:
    user = scale_users.User(name, town.web_url(web), scale_users.Tally())
    asyncio.run(user.login())
    return user


def sync_client(user: scale_users.User) -> httpx.Client:
    """The user's session, for plain calls from the test."""
    return httpx.Client(base_url=user.base, headers=dict(user.http.headers), timeout=120)


def namespace_of(town: Topology, name: str) -> str:
    (pk,) = town.sql("select id from auth_user where username = %s", name)[0]
    return f"user-{pk}"


def records_on(town: Topology, server: int, namespace: str) -> list[tuple[str, str, str]]:
    """(content, source, kind) of each memory of `namespace` on that memory server."""
    path = town.dir / f"memory-{server}" / "memories.sqlite3"
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        query = "select content, coalesce(source, ''), kind from memories where namespace = ?"
        return db.execute(query, (namespace,)).fetchall()


def test_a_memory_saved_on_one_daphne_is_shown_live_on_the_other(town):
    on_one = logged_in(town, 1, "user000")
    base_two = town.web_url(2)
    headers = {
        "Cookie": on_one.http.headers["Cookie"],
        "Origin": f"https://{base_two[7:]}",
        "X-Forwarded-Proto": "https",
    }
    url = f"ws://{base_two[7:]}/ws/memory/"
    with connect(url, additional_headers=headers, origin=None, open_timeout=30) as page:
        with sync_client(on_one) as client:
            saved = client.post(
                "/api/memory/add", json={"content": "Léa keeps bees on the roof in Lyon"}
            )
        assert saved.status_code == 201, saved.text
        deadline = time.monotonic() + 60
        frames = []
        while time.monotonic() < deadline:
            frames.append(page.recv(timeout=60))
            if "Léa keeps bees on the roof in Lyon" in frames[-1]:
                break
        assert "Léa keeps bees on the roof in Lyon" in frames[-1], frames


def test_chat_search_the_workers_backup_and_each_user_on_their_server(town):
    user = logged_in(town, 2, "user001")
    with sync_client(user) as client:
        chat = client.post("/api/conversations", json={"title": "Bees"}).json()["id"]
        for n in range(6):  # 12 messages: past MEMORY_AUTOSAVE_MIN_MESSAGES, saved whole
            said = f"Turn {n}: the apiary near Villeurbanne needs a new queen excluder"
            turn = client.post(f"/api/conversations/{chat}/messages", json={"content": said})
            assert turn.status_code == 201, turn.text
    # Chat search on Postgres, from the other Daphne.
    other = logged_in(town, 1, "user001")
    with sync_client(other) as client:
        found = client.get("/api/conversations/search", params={"q": "Villeurbanne"}).json()
    assert {hit["conversation_id"] for hit in found["results"]} == {chat}

    # The worker learnt from the conversation and saved it whole, on the user's server.
    namespace = namespace_of(town, "user001")
    urls = [town.memory_url(n) for n in (1, 2)]
    home = 1 + urls.index(shards.server_for(namespace, urls))
    source = f"conversation:{chat}:"

    def backups() -> list[tuple[str, str, str]]:
        # Facts learnt from the chat carry its source too: a backup is kind `conversation`.
        found = records_on(town, home, namespace)
        return [r for r in found if r[1].startswith(source) and r[2] == "conversation"]

    wait_until(lambda: len(backups()) >= 6, "the worker saves the conversation", timeout=180)
    assert len(backups()) == 6  # one per exchange, none twice
    assert records_on(town, 3 - home, namespace) == []  # nothing on the other server


@pytest.mark.parametrize("part", ["redis", "postgres", "memory-1", "worker", "web-1"])
def test_a_part_killed_under_load_leaves_nothing_lost_duplicated_or_streaming(town, part):
    marks: dict[str, float] = {}
    tally = asyncio.run(
        scale_users.load(
            town,
            USERS,
            SECONDS,
            scale_users.killed_and_restarted(town, part, marks, at=KILL_AT, down_for=DOWN_FOR),
        )
    )
    kept = scale_users.count(town, tally)

    assert "back" in marks  # the part was killed and started again during the load
    assert tally.ok["turn"] and tally.ok["save"], tally.failed
    # The users went on after the restart: every kind of call succeeded after it.
    after = {op for t, op, ok in tally.attempts if ok and t > marks["back"]}
    assert {"turn", "save", "search"} <= after, json.dumps(tally.attempts[-20:])
    assert kept == {
        **kept,
        "saves lost": 0,
        "saves duplicated": 0,
        "turns lost": 0,
        "turns duplicated": 0,
        "answers left streaming": 0,
        "answers not learnt": 0,
        "jobs failed for good": 0,
        "jobs never run": 0,
        "writes given up": 0,
    }, dict(tally.failed)
