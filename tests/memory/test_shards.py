"""Users spread over several memory servers by a stable mapping of their namespace."""

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from memory import shards

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
