"""A real MCP client over stdio against `python -m ikario_rag` on a given index directory."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent


@asynccontextmanager
async def memory_server(index_dir: Path, root: Path = ROOT):
    """`python -m ikario_rag` of the checkout at `root` (default: this one) on `index_dir`."""
    env = {
        **os.environ,
        "IKARIO_INDEX_DIR": str(index_dir),
        "HF_HUB_OFFLINE": "1",
        "IKARIO_LOG_LEVEL": "WARNING",
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ikario_rag"], env=env, cwd=str(root)
    )
    async with Client(params, mode="legacy") as client:
        yield client


async def call(client, tool: str, **arguments) -> dict:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text}")
    return result.structured_content or json.loads(result.content[0].text)


async def wait_indexed(client, namespace: str, timeout: float = 3600.0) -> float:
    """Seconds until every record of `namespace` has its vector (ikario_rag writes vectors
    behind the add): what a recall or latency figure must wait for. A server that writes
    them in the add (no `unindexed` in its stats) is done at once."""
    started = time.perf_counter()
    while (await call(client, "memory_stats", namespace=namespace)).get("unindexed"):
        if time.perf_counter() - started > timeout:
            raise TimeoutError(f"{namespace}: vectors still pending after {timeout:.0f} s")
        await asyncio.sleep(0.1)
    return time.perf_counter() - started
