"""Users spread over several memory servers by a stable mapping of their namespace."""

import io
from collections import Counter

import pytest
from django.core.management import call_command
from hypothesis import given
from hypothesis import strategies as st

from memory.client import services, shards
from memory.client.errors import MemoryUnavailable
from tests.fixtures.memory_server import HttpServer, MemoryServer

SERVERS = ["http://mem-a:8765/mcp", "http://mem-b:8765/mcp", "http://mem-c:8765/mcp"]
USERS = [f"user-{n}" for n in range(3000)]


def test_one_server_holds_everyone():
    assert {shards.server_for(user, SERVERS[:1]) for user in USERS} == {SERVERS[0]}


def test_users_are_spread_evenly():
    counts = Counter(shards.server_for(user, SERVERS) for user in USERS)
    assert set(counts) == set(SERVERS)
    assert min(counts.values()) > 0.8 * len(USERS) / len(SERVERS)


def test_the_mapping_does_not_depend_on_the_order_of_the_list():
    assert all(
        shards.server_for(user, SERVERS) == shards.server_for(user, SERVERS[::-1]) for user in USERS
    )


def test_adding_a_server_moves_only_users_to_it_about_one_in_n():
    grown = [*SERVERS, "http://mem-d:8765/mcp"]
    moves = shards.moving(USERS, SERVERS, grown)
    assert {to for _, _, to in moves} == {"http://mem-d:8765/mcp"}
    assert 0.15 * len(USERS) < len(moves) < 0.35 * len(USERS)


def test_losing_a_server_moves_only_its_own_users():
    moves = shards.moving(USERS, SERVERS, SERVERS[:2])
    assert {source for _, source, _ in moves} == {SERVERS[2]}


@given(st.text(max_size=200))
def test_any_namespace_has_a_server(namespace):
    assert shards.server_for(namespace, SERVERS) in SERVERS


# --- several real memory servers ------------------------------------------------------


@pytest.fixture
def second_server(memory_server, tmp_path):
    """Another memory server over HTTP, its own index, the same token as the first."""
    server = MemoryServer(HttpServer(tmp_path / "index-b", token=memory_server.token))
    server.wait_connected()
    yield server
    server.server.stop()


def users_on_each(django_user_model, servers, count=2):
    """`count` users whose memories live on each server (users made until it is so)."""
    found = {url: [] for url in servers}
    n = 0
    while any(len(users) < count for users in found.values()):
        n += 1
        user = django_user_model.objects.create_user(f"shard-user-{n}")
        users = found[shards.server_for(f"user-{user.pk}", servers)]
        if len(users) < count:
            users.append(user)
    return found


def held_by(server, user) -> list[str]:
    found = server.client.call_tool(
        "get_recent_memories", {"limit": 100, "namespace": f"user-{user.pk}"}
    )
    return [m["content"] for m in found.get("memories") or []]


def test_each_call_goes_to_the_users_own_server(
    memory_server, second_server, settings, django_user_model
):
    servers = [memory_server.url, second_server.url]
    settings.MCP_IKARIO_SERVER_URLS = servers
    on = users_on_each(django_user_model, servers)
    for users in on.values():
        for user in users:
            services.add_thought(user=user, content=f"{user.username} keeps bees on the roof")

    for server in (memory_server, second_server):
        for url, users in on.items():
            for user in users:
                expected = [f"{user.username} keeps bees on the roof"] if url == server.url else []
                assert held_by(server, user) == expected
    for users in on.values():
        for user in users:
            found = services.search_memories(user=user, query="bees on the roof", mode="text")
            assert {m["content"] for m in found["results"]} == {
                f"{user.username} keeps bees on the roof"
            }


def test_a_lost_server_affects_only_its_own_users(
    memory_server, second_server, settings, django_user_model
):
    servers = [memory_server.url, second_server.url]
    settings.MCP_IKARIO_SERVER_URLS = servers
    on = users_on_each(django_user_model, servers, count=1)
    (kept,), (lost,) = on[memory_server.url], on[second_server.url]
    services.add_thought(user=kept, content="The kept user plays the cello")

    second_server.server.stop()

    found = services.search_memories(user=kept, query="cello", mode="text")
    assert [m["content"] for m in found["results"]] == ["The kept user plays the cello"]
    with pytest.raises(MemoryUnavailable):
        services.search_memories(user=lost, query="cello", mode="text", timeout=3)
    assert services.memory_stats(user=lost)["status"] == "disconnected"
    assert services.memory_stats(user=kept)["status"] == "connected"


def test_adding_a_server_moves_the_users_listed_and_only_them(
    memory_server, second_server, settings, django_user_model
):
    settings.MCP_IKARIO_SERVER_URLS = [memory_server.url]
    grown = [memory_server.url, second_server.url]
    on = users_on_each(django_user_model, grown, count=1)
    (stays,), (moves,) = on[memory_server.url], on[second_server.url]
    for user in (stays, moves):
        services.add_thought(user=user, content=f"{user.username} was born in Brest")
        services.add_thought(user=user, content=f"{user.username} runs on Sundays")

    out = io.StringIO()
    call_command("memory_shards", "--adding", second_server.url, "--move", stdout=out)

    assert f"{moves.username}\t{memory_server.url} -> {second_server.url}" in out.getvalue()
    assert stays.username not in out.getvalue()
    assert held_by(memory_server, moves) == []
    assert sorted(held_by(second_server, moves)) == [
        f"{moves.username} runs on Sundays",
        f"{moves.username} was born in Brest",
    ]
    assert len(held_by(memory_server, stays)) == 2
    settings.MCP_IKARIO_SERVER_URLS = grown
    found = services.search_memories(user=moves, query="Brest", mode="text")
    assert found["results"][0]["content"] == f"{moves.username} was born in Brest"
