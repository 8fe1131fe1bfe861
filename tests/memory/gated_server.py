"""The real ikario_rag over streamable HTTP, serving only once a test opens the gate: a
memory server "starting".

    python tests/memory/gated_server.py --port N --index-dir DIR   (GATED_SERVER_DIR set)

It listens on the port at once (a client's connection and handshake are accepted by the
system and wait, as with a server still loading), writes `listening` in GATED_SERVER_DIR,
waits until the test creates `open` there (at most GATED_SERVER_WAIT seconds, default
600), then runs `python -m ikario_rag --transport streamable-http` on that same socket,
with IKARIO_TOKEN from the environment: it answers every connection that waited.
"""

import argparse
import os
import runpy
import socket
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--index-dir", required=True)
    options = parser.parse_args()
    listening = socket.socket()
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listening.bind(("127.0.0.1", options.port))
    listening.listen(128)
    gate = Path(os.environ["GATED_SERVER_DIR"])
    (gate / "listening").write_text(str(os.getpid()))
    deadline = time.monotonic() + float(os.environ.get("GATED_SERVER_WAIT", "600"))
    while not (gate / "open").exists() and time.monotonic() < deadline:
        time.sleep(0.05)

    import uvicorn

    serve = uvicorn.Server.run
    # ikario_rag's server on the socket that has been listening all along.
    uvicorn.Server.run = lambda self, sockets=None: serve(self, sockets=[listening])
    sys.argv = ["ikario_rag", "--transport", "streamable-http", "--host", "127.0.0.1"]
    sys.argv += ["--port", str(options.port), "--index-dir", options.index_dir]
    runpy.run_module("ikario_rag", run_name="__main__", alter_sys=True)
