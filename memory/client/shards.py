"""Which memory server holds a user's memories, when there are several.

MCP_IKARIO_SERVER_URLS lists the memory servers; each user's namespace lives on exactly one,
chosen by rendezvous hashing: every server gets a score from a hash of (server, namespace)
and the highest wins. The choice is stable (the same on every app process and machine, with
no table to share) and adding a server moves only the users whose new top score is the new
server's, about 1 in N: those are the users to move (`manage.py memory_shards --adding URL`
lists them; docs/DEPLOY.md, "Adding a memory server"). A server that is down takes only its own
users' memories with it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence


def score(server: str, namespace: str) -> int:
    digest = hashlib.sha256(f"{server}\n{namespace}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


def server_for(namespace: str, servers: Sequence[str]) -> str:
    """The server of `namespace` among `servers` (at least one)."""
    if not servers:
        raise ValueError("no memory server configured")
    return max(servers, key=lambda server: (score(server, namespace), server))


def moving(
    namespaces: Iterable[str], servers: Sequence[str], new_servers: Sequence[str]
) -> list[tuple[str, str, str]]:
    """(namespace, from, to) for each namespace whose server changes between the two lists."""
    moves = []
    for namespace in namespaces:
        before, after = server_for(namespace, servers), server_for(namespace, new_servers)
        if before != after:
            moves.append((namespace, before, after))
    return moves
