"""The long-lived MCP client: one per process, talking to ikario_rag.

Which server: MCP_IKARIO_SERVER_URL (or MCP_IKARIO_SERVER_URLS), a running ikario_rag over
streamable HTTP, sent IKARIO_TOKEN as its bearer token: how every process of the app reaches
it (the web app, its worker, manage.py commands), on one machine as across several. The
app never starts a memory server itself: `make run` starts one (Procfile), and a process
that finds none says how to start it. (ikario_rag also speaks stdio, for Claude Desktop.)
Every session is an `ikario_rag.client.MemorySession`: the SDK's client serialises each
request inside its writer task, and a lone surrogate in an argument used to kill that task
and the whole connection for every user; MemorySession makes any argument sendable first.

The client starts when the web process serves (ikario_clone/web.py: connect_all), else on
the first call, behind a lock. The SDK's HTTP client and session are anyio task groups
that must be entered and exited by the same task: one owner task, on a dedicated thread
with its own event loop, holds them for the life of the connection. Calls are coroutines
submitted to that loop with run_coroutine_threadsafe, so sync views, management commands
and async consumers all share the one connection.

The owner reconnects with backoff when the server dies (every 2 s at most),
and `status()` says connected / disconnected / disabled. A reply too large to read fails
its own call only; a session a restarted server lost is opened again and the call resent.
Every call has one deadline (`timeout`, else MCP_CALL_TIMEOUT), enforced in one place, on
the owner's loop, around waiting for the connection and the call itself; callers only
wait for the outcome. Only memory/client/services.py uses this.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field

import anyio
import httpx2
from django.conf import settings
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED

from ikario_rag.client import MAX_REPLY_BYTES, MemorySession, http_streams
from memory.client import shards
from memory.client.errors import MemoryDisabled, MemoryToolError, MemoryUnavailable

logger = logging.getLogger("memory.client.mcp")

# Reconnect delays after failed attempts; a connection that lived this long counts as
# healthy, so its death is retried at once rather than after a backoff. A server is tried
# again every 2 s at most (a refused connection costs nothing), so it is back in use
# within seconds of a restart.
FIRST_BACKOFF = 0.5
MAX_BACKOFF = 2.0
HEALTHY_AFTER = 5.0
# A call finding the server down waits for a retry due this soon, and fails otherwise.
RETRY_WAIT = 2.0
# While idle the owner pings the server so a dead or restarted server is noticed soon.
PING_INTERVAL = 3.0
PING_TIMEOUT = 5.0
UNREADABLE = "memory unavailable: the memory server's answer could not be read"
REPLY_TOO_LARGE = "memory unavailable: the memory server's answer was too large to read"
# The SDK's words for one call's reply stream failing (e.g. larger than max_reply_bytes),
# as against the connection closing, and for a session the server no longer knows.
REPLY_STREAM_FAILED = "SSE stream failed"
SESSION_GONE = ("Session not found", "Session terminated")
# How to start a memory server, for whoever reads why there is none.
HOW_TO_START = (
    "start it: `make run` does (with the URL and token in .env), or alone "
    "`IKARIO_TOKEN=<token> python -m ikario_rag --transport streamable-http --port 8765` "
    "with MCP_IKARIO_SERVER_URL=http://127.0.0.1:8765/mcp and the same IKARIO_TOKEN here"
)
NOT_CONFIGURED = "no memory server configured (MCP_IKARIO_SERVER_URL is empty): " + HOW_TO_START


@dataclass(frozen=True)
class ServerTarget:
    """Which server a client talks to; a change of target means a new client.

    server_url (MCP_IKARIO_SERVER_URL, e.g. http://127.0.0.1:8765/mcp): a running ikario_rag
    over streamable HTTP, sent IKARIO_TOKEN as its bearer token: how several processes
    (Daphne, its worker, manage.py commands) share one index, which a single server may
    hold (it locks its directory). Empty: none configured, every call says how to start one.
    """

    server_url: str = ""
    # The bearer token sent to server_url (IKARIO_TOKEN): never in a repr, so never logged.
    token: str = field(default="", repr=False)

    @classmethod
    def from_settings(cls, namespace: str | None = None) -> ServerTarget:
        """The server of `namespace` (MCP_IKARIO_SERVER_URLS, memory/client/shards.py); with no
        namespace (the server's own health and stats), the first one."""
        urls = server_urls()
        if len(urls) > 1 and namespace is not None:
            url = shards.server_for(namespace, urls)
        else:
            url = urls[0] if urls else ""
        return cls(server_url=str(url), token=str(settings.IKARIO_TOKEN))


def server_urls() -> list[str]:
    """The memory servers: MCP_IKARIO_SERVER_URLS, else MCP_IKARIO_SERVER_URL, else none
    (then every call says how to start one)."""
    urls = _listed_urls()
    if urls:
        return urls
    return [settings.MCP_IKARIO_SERVER_URL] if settings.MCP_IKARIO_SERVER_URL else []


def _listed_urls() -> list[str]:
    return [url.strip() for url in settings.MCP_IKARIO_SERVER_URLS if url.strip()]


def memory_enabled() -> bool:
    return bool(settings.MCP_MEMORY_ENABLED)


def call_timeout() -> float:
    return float(settings.MCP_CALL_TIMEOUT)


def connect_timeout() -> float:
    # The handshake with a running server (one still starting answers once it listens).
    return float(settings.MCP_CONNECT_TIMEOUT)


def _url_setting() -> str:
    """The setting the memory servers' URLs come from, named in what the user reads."""
    return "MCP_IKARIO_SERVER_URLS" if _listed_urls() else "MCP_IKARIO_SERVER_URL"


def _why(exc: BaseException, url: str) -> str:
    """What to do about a server at `url` that could not be reached (the SDK wraps the
    HTTP client's error in exception groups)."""
    found: list[BaseException] = [exc]
    while found:
        error = found.pop()
        if isinstance(error, BaseExceptionGroup):
            found.extend(error.exceptions)
        elif isinstance(error, httpx2.ConnectError):
            setting = _url_setting()
            return f"no memory server answers at {url} ({setting}): {HOW_TO_START}"
        elif isinstance(error, httpx2.HTTPStatusError) and error.response.status_code == 401:
            return (
                f"the memory server at {url} refused the token: IKARIO_TOKEN must be the one "
                "it was started with"
            )
    return f"{type(exc).__name__}: {exc}"


class MemoryClient:
    """One connection to one ikario_rag server, owned by a background thread."""

    def __init__(self, target: ServerTarget, *, max_reply_bytes: int = MAX_REPLY_BYTES):
        self.target = target
        self.max_reply_bytes = max_reply_bytes
        self.connections = 0  # how many times it connected (tests watch reconnects)
        self.failures = 0  # failed connection attempts since the last success
        self._attempts = 0
        self.last_error = ""
        self._state = "idle"  # idle | connecting | connected | down | closed
        self._retry_at = 0.0
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._session: MemorySession | None = None
        self._closing = False
        # Loop-side signals, created on the loop by the owner task.
        self._wake: asyncio.Event | None = None
        self._changed: asyncio.Event | None = None
        self._broken = ""

    # --- what callers see -----------------------------------------------------------

    @property
    def state(self) -> str:
        return self._state

    @property
    def closed(self) -> bool:
        # Also after a crash of the owner thread: get_client() then starts a new client.
        return self._closing or self._state == "closed"

    def status(self) -> str:
        """connected | starting (the first connection is in progress: the server is
        loading) | disconnected | disabled."""
        if not memory_enabled():
            return "disabled"
        self.start()
        if self._state == "connected":
            return "connected"
        if self._state in ("idle", "connecting") and not self.connections and not self.failures:
            return "starting"
        return "disconnected"

    def retry_after(self) -> float:
        if self._state == "down":
            return max(1.0, self._retry_at - time.monotonic())
        return 5.0

    def call_tool(self, name: str, arguments: dict, *, timeout: float | None = None) -> dict:
        """Call one tool from sync code; returns its structured result."""
        timeout = call_timeout() if timeout is None else timeout
        return self._submit(name, arguments, timeout).result()

    async def acall_tool(self, name: str, arguments: dict, *, timeout: float | None = None) -> dict:
        """Call one tool from async code without blocking the caller's loop (cancelling
        the caller cancels the call)."""
        timeout = call_timeout() if timeout is None else timeout
        return await asyncio.wrap_future(self._submit(name, arguments, timeout))

    def start(self) -> None:
        """Start the owner thread if it is not running (cheap when it is); with no server
        configured, none: the client is down, and says how to start a server."""
        if self._thread is not None:
            return
        with self._lock:
            if self._thread is not None or self._closing:
                return
            if not self.target.server_url:
                if self._state != "down":
                    self._state = "down"
                    self._record_failure(NOT_CONFIGURED)
                return
            self._loop = asyncio.new_event_loop()
            ready = threading.Event()
            self._thread = threading.Thread(
                target=self._run_loop, args=(ready,), name="ikario-mcp-client", daemon=True
            )
            self._thread.start()
            ready.wait()

    def close(self, wait: float = 15.0) -> None:
        """Close the connection and stop the owner thread; safe to call twice."""
        with self._lock:
            self._closing = True
            loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            self._state = "closed"
            return
        if not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop already stopped
                loop.call_soon_threadsafe(self._wake_owner)
        thread.join(wait)
        if thread.is_alive():
            logger.warning("MCP Ikario client did not stop within %.0fs", wait)

    # --- the owner thread -----------------------------------------------------------

    def _submit(self, name: str, arguments: dict, timeout: float) -> concurrent.futures.Future:
        if not memory_enabled():
            raise MemoryDisabled()
        self.start()
        if not self.target.server_url:
            raise MemoryUnavailable(detail=NOT_CONFIGURED)
        if self._closing or self._loop is None:
            raise MemoryUnavailable("memory unavailable: the memory client is shut down")
        if self._state == "down" and self._retry_at > time.monotonic() + min(timeout, RETRY_WAIT):
            # Fail fast while the owner waits to retry: a page must not hang on a dead server.
            raise self._down()
        return asyncio.run_coroutine_threadsafe(self._call(name, arguments, timeout), self._loop)

    def _down(self) -> MemoryUnavailable:
        # Why it is down (no server configured, none answering, a refused token) is for the
        # log and for staff (`last_error`: the admin's memory health page, manage.py memory_stats).
        return MemoryUnavailable(
            retry_after=self.retry_after(), detail=self.last_error or "not connected"
        )

    def _run_loop(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()
        ready.set()
        try:
            self._loop.run_until_complete(self._own_connection())
        except Exception:
            logger.exception("MCP Ikario client owner crashed")
        finally:
            self._state = "closed"
            self._loop.close()

    def _wake_owner(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def _set_state(self, state: str) -> None:
        self._state = state
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _own_connection(self) -> None:
        backoff = 0.0
        while not self._closing:
            self._attempts += 1
            self._set_state("connecting")
            lived = await self._connect_once()
            if self._closing:
                break
            if lived >= HEALTHY_AFTER:
                backoff = 0.0
            else:
                backoff = min(max(backoff * 2, FIRST_BACKOFF), MAX_BACKOFF)
            self._retry_at = time.monotonic() + backoff
            self._set_state("down")
            if backoff:
                logger.info("MCP Ikario client: next connection attempt in %.1fs", backoff)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), backoff)
            self._wake.clear()
        self._set_state("closed")
        logger.info("MCP Ikario client closed")

    async def _connect_once(self) -> float:
        """One connection's whole life; returns how long it was connected (0 if never)."""
        url = self.target.server_url
        connected_at = None
        failure = ""
        self._broken = ""
        started = time.monotonic()
        try:
            streams_of = http_streams(
                url, token=self.target.token, max_reply_bytes=self.max_reply_bytes
            )
            async with streams_of as streams, MemorySession(*streams) as session:
                with anyio.fail_after(connect_timeout()):
                    init = await session.initialize()
                    # Lists tools once now, so no user call pays for it. The server
                    # loads its own model meanwhile (ikario_rag/preload.py).
                    await session.list_tools()
                self._session = session
                self.connections += 1
                self.failures = 0
                connected_at = time.monotonic()
                self.last_error = ""
                self._set_state("connected")
                logger.info(
                    "MCP Ikario client connected (%s %s, %s) in %.1fs",
                    init.server_info.name,
                    init.server_info.version,
                    url,
                    connected_at - started,
                )
                failure = await self._watch(session)
        except TimeoutError:
            failure = f"no answer to the MCP handshake within {connect_timeout():g}s"
        except MCPError as exc:
            failure = f"MCP error during the handshake: {exc.message}"
        except Exception as exc:
            failure = _why(exc, url)
        finally:
            self._session = None
        lived = time.monotonic() - connected_at if connected_at else 0.0
        if self._closing and not failure:
            return lived
        self._record_failure(failure or "the server closed the connection")
        return lived

    async def _watch(self, session: MemorySession) -> str:
        """Hold the connection until it breaks or the client closes; return why it ended."""
        while not self._closing:
            try:
                await asyncio.wait_for(self._wake.wait(), PING_INTERVAL)
            except TimeoutError:
                try:
                    with anyio.fail_after(PING_TIMEOUT):
                        await session.send_ping()
                except Exception as exc:
                    return f"the server stopped answering pings ({type(exc).__name__})"
                continue
            self._wake.clear()
            if self._broken:
                return self._broken
        return ""

    def _record_failure(self, reason: str) -> None:
        self.failures += 1
        self.last_error = reason
        logger.error("MCP Ikario client disconnected: %s", self.last_error)

    async def _session_for_call(self, deadline: float) -> MemorySession:
        """The live session, waiting (until `deadline`) for a connection in progress or a
        retry due before then; one failed attempt is enough, never the whole backoff."""
        attempts = self._attempts - 1 if self._state == "connecting" else self._attempts
        while True:
            if self._state == "connected" and self._session is not None and not self._broken:
                return self._session
            if self._state == "closed" or (
                self._state == "down"
                and (
                    self._attempts > attempts
                    or self._retry_at > min(deadline, time.monotonic() + RETRY_WAIT)
                )
            ):
                raise self._down()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise MemoryUnavailable("memory unavailable: the memory server is starting")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Block until connected (True) or until an attempt failed or `timeout` ran out."""
        if not memory_enabled():
            return False
        self.start()
        if self._loop is None or self._closing:
            return False
        timeout = connect_timeout() if timeout is None else timeout
        deadline = time.monotonic() + timeout
        future = asyncio.run_coroutine_threadsafe(self._session_for_call(deadline), self._loop)
        try:
            future.result(timeout + 2)
        except (MemoryUnavailable, concurrent.futures.TimeoutError):
            return False
        return True

    def _mark_broken(self, reason: str) -> None:
        if not self._broken:
            self._broken = reason
        self._wake_owner()

    async def _call(self, name: str, arguments: dict, timeout: float) -> dict:
        """The call's one deadline: waiting for a connection in progress included."""
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                deadline = time.monotonic() + timeout
                session = await self._session_for_call(deadline)
                try:
                    result = await session.call_tool(name, arguments)
                except MCPError as exc:
                    if exc.message not in SESSION_GONE:
                        raise
                    # A restarted server no longer knows our session and ran nothing: send
                    # the call again on a new session (a refusal would read as "not found").
                    logger.warning("MCP call %s: the server lost our session", name)
                    self._mark_broken("the server lost the session (it restarted)")
                    session = await self._session_for_call(deadline)
                    result = await session.call_tool(name, arguments)
        except TimeoutError:
            logger.warning("MCP call %s timed out after %.1fs", name, timeout)
            raise MemoryUnavailable(f"memory unavailable: no answer within {timeout:g} s") from None
        except MCPError as exc:
            elapsed = (time.perf_counter() - started) * 1000
            if exc.code == CONNECTION_CLOSED and exc.message.startswith(REPLY_STREAM_FAILED):
                # Only this call's reply stream failed (too large to read): the session and
                # everyone else's calls go on.
                logger.warning("MCP call %s: its reply failed: %s", name, exc.message)
                raise MemoryUnavailable(REPLY_TOO_LARGE, detail=exc.message) from None
            if exc.message in SESSION_GONE:
                self._mark_broken("the server lost the session (it restarted)")
                raise MemoryUnavailable(
                    "memory unavailable: the memory server restarted", retry_after=1
                ) from None
            if exc.code == CONNECTION_CLOSED:
                logger.warning("MCP call %s lost the server after %.0f ms", name, elapsed)
                self._mark_broken("the server closed the connection during a call")
                raise MemoryUnavailable(
                    "memory unavailable: the memory server stopped during the call", retry_after=1
                ) from None
            logger.warning("MCP call %s failed in %.0f ms: %s", name, elapsed, exc.message)
            raise MemoryToolError(name, exc.message) from None
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError) as exc:
            self._mark_broken(f"the connection broke ({type(exc).__name__})")
            raise MemoryUnavailable(
                "memory unavailable: the connection to the memory server broke", retry_after=1
            ) from None
        except RuntimeError as exc:
            # The SDK checks results against the tool's output schema: a bug, not the input.
            logger.warning("MCP call %s returned an invalid result: %s", name, exc)
            raise MemoryUnavailable(UNREADABLE, detail=str(exc)) from None
        elapsed = (time.perf_counter() - started) * 1000
        text = "".join(getattr(block, "text", "") for block in result.content)
        if result.is_error:
            logger.info("MCP call %s refused in %.1f ms: %s", name, elapsed, text)
            raise MemoryToolError(name, text.strip() or "the tool reported an error")
        logger.info("MCP call %s ok in %.1f ms", name, elapsed)
        if isinstance(result.structured_content, dict):
            return result.structured_content
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            logger.warning("MCP call %s returned no JSON object: %.200s", name, text)
            raise MemoryUnavailable(UNREADABLE)
        return parsed


# One client per target: in production there is only ever one; a test that points the
# settings elsewhere for a while gets its own, and the real one stays connected.
_clients: dict[ServerTarget, MemoryClient] = {}
_clients_lock = threading.Lock()


def get_client(namespace: str | None = None) -> MemoryClient:
    """The process's client for the server holding `namespace` (one server: that one)."""
    return client_for(ServerTarget.from_settings(namespace))


def client_for(target: ServerTarget) -> MemoryClient:
    """The process's client for one server (started on first use)."""
    client = _clients.get(target)
    if client is not None and not client.closed:
        return client
    with _clients_lock:
        client = _clients.get(target)
        if client is None or client.closed:
            client = _clients[target] = MemoryClient(target)
        return client


def connect_all() -> None:
    """Start a client for every memory server; each connects on its own thread (none
    configured: the one client logs how to start a server)."""
    for url in server_urls() or [""]:
        client_for(ServerTarget(server_url=url, token=str(settings.IKARIO_TOKEN))).start()


def close_client() -> None:
    """Close every client of this process (at exit, or for tests to start afresh)."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()


# Tests repoint the client at another server or index by resetting it.
reset_for_tests = close_client

atexit.register(close_client)
