"""Command line: `python -m ikario_rag [serve options]`, `python -m ikario_rag reindex`, or
`python -m ikario_rag export-model` (export the embedding model to ONNX into its cache:
`make install` runs it, so that no server start pays for it).

Options fall back to the environment (ikario_rag/config.py): IKARIO_INDEX_DIR,
IKARIO_TRANSPORT, IKARIO_HOST, IKARIO_PORT, IKARIO_LOG_LEVEL. Logs go to stderr; stdout belongs
to JSON-RPC (stdio: the MCP specification's transport, for a client that spawns its own server,
such as Claude Desktop).
Over streamable HTTP every request needs a bearer token (IKARIO_TOKEN, IKARIO_TOKENS:
ikario_rag/access.py): the server does not start without one, on any address. Everything
it creates (index, lock) is readable by its user only.
Exit codes: 0 done, 2 a setting is missing or wrong, 3 the index directory is in use by
another server.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from ikario_rag import config

MISCONFIGURED = 2
LOCKED = 3
# Seconds a thread running Python keeps the GIL while another waits for it (Python's
# default is 0.005). A search shares this interpreter with bulk work on other threads (an
# auto-save's adds, the indexer at nice 10): it waited a whole interval at each of its many
# hand-overs, and longer for a holder its nice level kept off the cores. A search during an
# auto-save took 235 ms instead of 26 at the median; 24 ms with 1 ms (bench/realistic_reply.py).
SWITCH_INTERVAL = 0.001


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="ikario_rag", description=__doc__)
    parser.add_argument(
        "command", nargs="?", default="serve", choices=["serve", "reindex", "export-model"]
    )
    environment = config.settings()
    parser.add_argument("--index-dir", default=environment.index_dir)
    parser.add_argument(
        "--transport", default=environment.transport, choices=["stdio", "streamable-http"]
    )
    parser.add_argument("--host", default=environment.host)
    parser.add_argument("--port", type=int, default=environment.port)
    parser.add_argument("--log-level", default=environment.log_level)
    return parser.parse_args(argv)


def configure_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # The SDK and HTTP server log request contents below WARNING: never users' text.
    for name in ("mcp", "uvicorn", "httpx", "httpx2"):
        logging.getLogger(name).setLevel(max(logging.WARNING, logging.getLogger().level))


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse(argv)
    except config.Misconfigured as exc:
        print(f"ikario_rag: {exc}", file=sys.stderr)
        return MISCONFIGURED
    configure_logging(args.log_level)
    # The index, its lock, Chroma's files: this user's only (group and others get nothing).
    os.umask(0o077)
    config.quiet_libraries()
    if args.command == "export-model":
        return export_model()
    credentials = None
    if args.command == "serve" and args.transport == "streamable-http":
        credentials = http_credentials()
        if credentials is None:
            return MISCONFIGURED
    # The lock is taken before anything heavy is imported: a second server exits at once.
    from ikario_rag.lock import IndexLock, IndexLocked

    index_dir = Path(args.index_dir).resolve()
    try:
        lock = IndexLock(index_dir).acquire()
    except IndexLocked as exc:
        print(f"ikario_rag: {exc}", file=sys.stderr)
        return LOCKED
    try:
        if args.command == "reindex":
            return reindex(index_dir)
        return serve(index_dir, args, lock.path, credentials)
    finally:
        lock.release()


def http_credentials():
    """The tokens the HTTP transport accepts, or None (said on stderr) when there are none."""
    from ikario_rag.access import BadCredentials, Credentials

    try:
        credentials = Credentials.from_environ()
    except BadCredentials as exc:
        print(f"ikario_rag: {exc}", file=sys.stderr)
        return None
    if not credentials:
        print(
            "ikario_rag: streamable-http needs a credential: set IKARIO_TOKEN (a long random "
            "string the clients send as a bearer token) or IKARIO_TOKENS; any local user "
            "could otherwise read and delete every memory",
            file=sys.stderr,
        )
        return None
    return credentials


def export_model() -> int:
    from ikario_rag import model

    path = model.export_here()
    print(f"ikario_rag: embedding model ready at {path}", file=sys.stderr)
    quantised = model.ensure_quantised()  # for bulk indexing (a new server's first turns)
    print(f"ikario_rag: quantised embedding model ready at {quantised}", file=sys.stderr)
    return 0


def reindex(index_dir: Path) -> int:
    from ikario_rag.memory import Memory

    memory = Memory(index_dir)
    try:
        done = memory.reindex()
    finally:
        memory.close()
    print(f"ikario_rag: reindexed {done['records_indexed']} memories", file=sys.stderr)
    return 0


def share_the_interpreter() -> None:
    """A serving process hands the GIL over within SWITCH_INTERVAL."""
    sys.setswitchinterval(SWITCH_INTERVAL)


def serve(
    index_dir: Path,
    args: argparse.Namespace,
    lock_file: Path,
    credentials=None,
) -> int:
    import anyio

    from ikario_rag import transport
    from ikario_rag.app import build_server
    from ikario_rag.preload import Preload
    from ikario_rag.runtime import MemoryHost, Settings

    share_the_interpreter()
    # chromadb, the model and its warm-up start now, on threads (ikario_rag/preload.py).
    preload = Preload()
    settings = Settings(index_dir=index_dir, watched=(lock_file,), embedder=preload.embedder)
    server = build_server(MemoryHost(settings), credentials)
    logging.getLogger("ikario_rag").info("serving %s over %s", index_dir, args.transport)
    try:
        if args.transport == "stdio":
            anyio.run(transport.serve_stdio, server)
        else:
            transport.serve_http(
                server, args.host, args.port, list(config.settings().allowed_hosts)
            )
    finally:
        preload.join()
    return 0
