"""A real MCP server over streamable HTTP whose memory tools answer too slowly.

    python tests/memory/slow_server.py --port N   (tests start it: fixtures ScriptServer)

The timeout tests point MCP_IKARIO_SERVER_URL at it: it speaks the same tool names as
ikario_rag but every search sleeps SLOW_SERVER_SECONDS (default 30) before answering,
while memory_stats answers at once, so a test can see the client connect, then time out.
A search first creates the file SLOW_SERVER_STARTED names (when set): a test then knows the
call is inside the server, with no guess at how long sending it takes.
"""

import argparse
import asyncio
import os

from mcp.server.mcpserver import MCPServer

DELAY = float(os.environ.get("SLOW_SERVER_SECONDS", "30"))
STARTED = os.environ.get("SLOW_SERVER_STARTED", "")

server = MCPServer("slow-ikario", version="0.0.1")


@server.tool()
async def search_memories(query: str, n_results: int = 5, namespace: str = "default") -> dict:
    """Search, after a long pause."""
    if STARTED:
        open(STARTED, "w").close()
    await asyncio.sleep(DELAY)
    return {"results": [], "mode_used": "text"}


@server.tool()
async def memory_stats(namespace: str = "default") -> dict:
    """Stats, at once."""
    return {"total_memories": 0, "by_category": {}, "by_kind": {}, "last_save": None}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    server.run("streamable-http", host="127.0.0.1", port=parser.parse_args().port)
