"""A memory server that stops and comes back: how soon the app's client uses it again, and
how large a reply with a huge history is now.

The real ikario_rag over streamable HTTP on a temp index, one long-lived client (the web
app's). Each round kills the server, leaves it down DOWN seconds, starts it again on the
same port, and times from its listening again to the client connected. Two settings side
by side: the client's old backoff (doubling up to 30 s, a ping every 15 s) and the current
one (up to 2 s, every 3 s). Then the size of list_memories' reply for a memory of 50
versions of 20,000 characters, against the same page with its whole history.

Run: .venv/bin/python bench/memory_restart.py [--rounds 3] [--down 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
WORK = Path(tempfile.mkdtemp(prefix="ikario-bench-restart-"))
os.environ["DATABASE_URL"] = f"sqlite:///{WORK / 'bench.sqlite3'}"
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ikario_clone.settings")
os.environ["DEBUG"] = "true"
os.environ["LOG_LEVEL"] = "WARNING"
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")

import django  # noqa: E402

django.setup()

from memory.client import mcp  # noqa: E402
from tests.fixtures.memory_server import HttpServer  # noqa: E402


def _wait(condition, what: str, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"{what} within {timeout:g} s: no")
        time.sleep(0.02)


def back_after_restart(server: HttpServer, client, down: float) -> float:
    server.process.kill()
    server.process.wait()
    _wait(lambda: client.state != "connected", "the client noticed")
    time.sleep(down)
    server.start_again()
    listening = time.monotonic()
    _wait(lambda: client.state == "connected", "the client connected again")
    return time.monotonic() - listening


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--down", type=float, default=20.0)
    args = parser.parse_args()
    server = HttpServer(WORK / "index")
    client = mcp.MemoryClient(mcp.ServerTarget(server_url=server.url, token=server.token))
    try:
        for label, backoff, ping in (
            ("old: 30 s, ping 15 s", 30.0, 15.0),
            ("now: 2 s, ping 3 s", 2.0, 3.0),
        ):
            mcp.MAX_BACKOFF, mcp.PING_INTERVAL = backoff, ping
            gaps = []
            for _ in range(args.rounds):
                assert client.wait_connected(300), client.last_error
                time.sleep(ping + 1)  # the client idle, between two pings
                gaps.append(back_after_restart(server, client, args.down))
            shown = ", ".join(f"{g:.1f}" for g in gaps)
            median = statistics.median(gaps)
            print(f"{label}: in use {median:.1f} s after the server listens again ({shown})")
        namespace = "bench-restart"
        history = [{"content": f"version {n}: " + "long " * 4000} for n in range(50)]
        client.call_tool(
            "restore_memories",
            {"namespace": namespace, "memories": [{"content": "a diary", "history": history}]},
        )
        page = client.call_tool("list_memories", {"namespace": namespace})
        whole = {**page["memories"][0], "history": history}
        size = len(json.dumps(page, ensure_ascii=False).encode())
        before = len(json.dumps({**page, "memories": [whole]}, ensure_ascii=False).encode())
        print(f"list_memories reply: {size:,} bytes of JSON now; {before:,} with the whole history")
    finally:
        client.close()
        server.stop()
        shutil.rmtree(WORK, ignore_errors=True)


if __name__ == "__main__":
    main()
