"""Fair shares of the web process, decided before Django (ASGI, in front of the whole app).

Every way in counts: pages, htmx partials, the JSON API, chat turns over HTTP, and the
WebSocket (its opening and each message sent on it). Per user, known from the session
cookie, and per client address for requests with no known user:

- WEB_USER_RATE ("300/m", bursts of WEB_USER_BURST): requests of one signed-in user;
- WEB_ADDRESS_RATE ("300/m", bursts of WEB_ADDRESS_BURST, 100): requests from one address
  that carry no known session (anonymous floods, and the one look-up a new cookie costs);
- WEB_USER_AT_ONCE (6, what a browser opens at most per host): one user's (or anonymous
  address's) HTTP requests under way at once in this process. One more is refused at once,
  so 50 threads of one user hold 6 places, never the process.

Over a limit: 429 with Retry-After, written here: no database query, no template, sent
after a second's wait (REFUSAL_DELAY) that costs the event loop nothing and holds back a
client that asks again at once. Under
/api/ JSON as every API error; to htmx a toast fragment and an HX-Trigger
("tooManyRequests", static/chat/chat.js shows it); a page, a line of text. A socket over
the limit is refused at its opening (close 4429: the handshake fails) and a message over it
is dropped with a toast frame back. A session cookie is resolved once (its user id kept
SESSION_TTL seconds; concurrent requests with the same new cookie wait for one look-up).

The buckets live in this process's memory: each web process counts its own, which is
what protects that process (one Daphne is one event loop). Behind a reverse proxy, run
Daphne with --proxy-headers so the address is the client's; the proxy's own per-address
limits (docs/DEPLOY.md, Production) come first. Static files are not counted (ServeStatic
serves them without a query; a browser fetches several at once). WEB_LIMITS_ENABLED =
False turns all of this off. The memory API's own rates (memory/client/limits.py) still apply
inside Django.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import math
import time
from importlib import import_module

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.http.cookie import parse_cookie
from django.utils import translation
from django.utils.html import escape
from django.utils.translation import gettext as _

SESSION_TTL = 300.0  # seconds a session's user id is trusted without a look-up
MOST_KEYS = 100_000  # buckets and sessions kept; the least recently seen go first
SOCKET_REFUSED = 4429  # close code of a socket refused at its opening
REFUSAL_DELAY = 1.0  # seconds a refusal is held before it is sent (at most its Retry-After)
MOST_HELD = 64  # refusals of one user or address held at once; more are answered at once
_PERIODS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


@functools.lru_cache(maxsize=32)
def per_second(rate: str) -> float:
    """'300/m' -> 5.0 requests a second (django-ratelimit's spelling of a rate)."""
    count, _slash, period = rate.partition("/")
    return int(count) / _PERIODS[period.strip()[-1:].lower() or "s"]


class TokenBuckets:
    """One token bucket per key: `burst` tokens, refilled at `rate` a second."""

    def __init__(self, most_keys: int = MOST_KEYS):
        self.most_keys = most_keys
        self.buckets: collections.OrderedDict[str, tuple[float, float]] = collections.OrderedDict()

    def take(self, key: str, rate: float, burst: float) -> float:
        """Take a token: 0 if there was one, else the seconds until there will be."""
        now = time.monotonic()
        tokens, stamp = self.buckets.pop(key, (burst, now))
        tokens = min(burst, tokens + (now - stamp) * rate)
        wait = 0.0
        if tokens >= 1:
            tokens -= 1
        else:
            wait = (1 - tokens) / rate if rate > 0 else 60.0
        self.buckets[key] = (tokens, now)
        while len(self.buckets) > self.most_keys:
            self.buckets.popitem(last=False)
        return wait


class SessionUsers:
    """Session key -> user id (None: no signed-in user), kept SESSION_TTL seconds."""

    def __init__(self, most_keys: int = MOST_KEYS):
        self.most_keys = most_keys
        self.known: collections.OrderedDict[str, tuple[int | None, float]] = (
            collections.OrderedDict()
        )
        self.pending: dict[str, asyncio.Future] = {}

    def cached(self, key: str) -> tuple[bool, int | None]:
        found = self.known.get(key)
        if found is None or found[1] < time.monotonic():
            return False, None
        return True, found[0]

    async def look_up(self, key: str) -> int | None:
        """The session's user, from the session store once however many ask at once."""
        if key in self.pending:
            return await asyncio.shield(self.pending[key])
        future = asyncio.get_running_loop().create_future()
        self.pending[key] = future
        user = None
        try:
            store = import_module(settings.SESSION_ENGINE).SessionStore(session_key=key)
            user_id = (await store.aload()).get(SESSION_KEY)
            user = int(user_id) if user_id is not None else None
        except Exception:  # a broken or unreadable session is no user: Django says why
            user = None
        finally:
            self.pending.pop(key, None)
            if not future.done():  # those waiting on it are answered, even if this was cancelled
                future.set_result(user)
        self.known.pop(key, None)
        self.known[key] = (user, time.monotonic() + SESSION_TTL)
        while len(self.known) > self.most_keys:
            self.known.popitem(last=False)
        return user


def _headers(scope) -> dict[bytes, bytes]:
    return {k.lower(): v for k, v in scope.get("headers", ())}


def _address(scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class Refusal:
    def __init__(self, limit: str, retry_after: float):
        self.limit = limit
        self.retry_after = max(1, math.ceil(retry_after))

    def text(self) -> str:
        return _("Too many requests: try again in %(n)d s.") % {"n": self.retry_after}


class FairShares:
    """ASGI middleware: 429 (or a refused socket) over a user's or an address's share."""

    def __init__(self, application):
        self.application = application
        self.buckets = TokenBuckets()
        self.sessions = SessionUsers()
        self.under_way: collections.Counter[str] = collections.Counter()
        self.held: collections.Counter[str] = collections.Counter()  # refusals waiting

    async def __call__(self, scope, receive, send):
        kind = scope["type"]
        if kind not in ("http", "websocket") or not settings.WEB_LIMITS_ENABLED:
            return await self.application(scope, receive, send)
        if kind == "http" and scope["path"].startswith("/" + settings.STATIC_URL.lstrip("/")):
            return await self.application(scope, receive, send)
        headers = _headers(scope)
        key, refusal = await self._who(scope, headers)
        if kind == "websocket":
            return await self._socket(key, refusal, scope, receive, send, headers)
        if refusal is None and self.under_way[key] >= settings.WEB_USER_AT_ONCE:
            refusal = Refusal("WEB_USER_AT_ONCE", 1)
        if refusal is not None:
            return await self._refuse_later(key, scope, send, headers, refusal)
        self.under_way[key] += 1
        counted = True

        def let_go() -> None:
            nonlocal counted
            if counted:
                counted = False
                self.under_way[key] -= 1
                if self.under_way[key] <= 0:
                    del self.under_way[key]

        async def answered(message) -> None:
            await send(message)
            # Answered in full: the client may ask again while Django tidies up after it.
            if message["type"] == "http.response.body" and not message.get("more_body"):
                let_go()

        try:
            return await self.application(scope, receive, answered)
        finally:
            let_go()

    async def _refuse_later(self, key, scope, send, headers, refusal) -> None:
        """The 429, once REFUSAL_DELAY has passed: a client that asks again at once (50
        threads that ignore Retry-After) waits here, where waiting costs the event loop
        nothing, instead of making the one process answer thousands of refusals a second.
        Past MOST_HELD of one key's refusals held at once, the rest are answered at once
        and their connection closed."""
        if self.held[key] >= MOST_HELD:
            return await _refuse_http(scope, send, headers, refusal, close=True)
        self.held[key] += 1
        try:
            await asyncio.sleep(min(REFUSAL_DELAY, refusal.retry_after))
        finally:
            self.held[key] -= 1
            if self.held[key] <= 0:
                del self.held[key]
        return await _refuse_http(scope, send, headers, refusal)

    async def _who(self, scope, headers) -> tuple[str, Refusal | None]:
        """Whose request this is (user:ID or address:IP) and whether it is over its share;
        a new cookie's look-up is counted against the address before it is made."""
        cookie = parse_cookie((headers.get(b"cookie") or b"").decode("latin-1"))
        session = cookie.get(settings.SESSION_COOKIE_NAME, "")[:64]
        known, user = True, None
        if session:
            known, user = self.sessions.cached(session)
            if not known and session in self.sessions.pending:
                user, known = await self.sessions.look_up(session), True  # paid for already
        if user is not None:
            return f"user:{user}", self._take_user(user)
        address = f"address:{_address(scope)}"
        wait = self.buckets.take(
            address, per_second(settings.WEB_ADDRESS_RATE), settings.WEB_ADDRESS_BURST
        )
        if wait:
            return address, Refusal("WEB_ADDRESS_RATE", wait)
        if not known:
            user = await self.sessions.look_up(session)
            if user is not None:
                return f"user:{user}", self._take_user(user)
        return address, None

    def _take_user(self, user: int) -> Refusal | None:
        wait = self.buckets.take(
            f"user:{user}", per_second(settings.WEB_USER_RATE), settings.WEB_USER_BURST
        )
        return Refusal("WEB_USER_RATE", wait) if wait else None

    async def _socket(self, key, refusal, scope, receive, send, headers):
        if refusal is not None:
            message = await receive()  # websocket.connect: answered with a close
            if message["type"] == "websocket.connect":
                await send({"type": "websocket.close", "code": SOCKET_REFUSED})
            return None
        language = _language(headers)

        async def counted_receive():
            while True:
                message = await receive()
                if message["type"] != "websocket.receive":
                    return message
                over = self._take(key)
                if over is None:
                    return message
                with translation.override(language):
                    text = over.text()
                await send({"type": "websocket.send", "text": _toast(text)})
                # Read the next message no sooner: a flooding socket is slowed by its own
                # buffers, not answered as fast as it sends.
                await asyncio.sleep(min(REFUSAL_DELAY, over.retry_after))

        return await self.application(scope, counted_receive, send)

    def _take(self, key: str) -> Refusal | None:
        if key.startswith("user:"):
            return self._take_user(int(key.removeprefix("user:")))
        wait = self.buckets.take(
            key, per_second(settings.WEB_ADDRESS_RATE), settings.WEB_ADDRESS_BURST
        )
        return Refusal("WEB_ADDRESS_RATE", wait) if wait else None


def _language(headers) -> str:
    """The language the refusal is written in: the language cookie, else Accept-Language."""
    cookie = parse_cookie((headers.get(b"cookie") or b"").decode("latin-1"))
    wanted = [cookie.get(settings.LANGUAGE_COOKIE_NAME, "")]
    accept = (headers.get(b"accept-language") or b"").decode("latin-1")
    wanted += [part.split(";")[0].strip() for part in accept.split(",")]
    for code in filter(None, wanted):
        try:
            return translation.get_supported_language_variant(code)
        except LookupError:
            continue
    return settings.LANGUAGE_CODE


def _toast(text: str) -> str:
    return f'<div hx-swap-oob="beforeend:#toasts"><p class="toast">{escape(text)}</p></div>'


async def _refuse_http(scope, send, headers, refusal: Refusal, close: bool = False) -> None:
    with translation.override(_language(headers)):
        text = refusal.text()
    extra: list[tuple[bytes, bytes]] = []
    if scope["path"].startswith("/api/"):
        reason = {"field": None, "reason": text, "limit": refusal.limit}
        body = json.dumps({"error": reason, "retry_after": refusal.retry_after}).encode()
        content_type = b"application/json"
    elif headers.get(b"hx-request") == b"true":
        body = _toast(text).encode()
        content_type = b"text/html; charset=utf-8"
        trigger = {"tooManyRequests": {"text": text, "retryAfter": refusal.retry_after}}
        extra.append((b"hx-trigger", json.dumps(trigger).encode()))
    else:
        body = f"<!doctype html><title>429</title><p>{escape(text)}</p>\n".encode()
        content_type = b"text/html; charset=utf-8"
    response_headers = [
        (b"content-type", content_type),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(refusal.retry_after).encode()),
        *extra,
    ]
    if close:
        response_headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": 429, "headers": response_headers})
    await send({"type": "http.response.body", "body": body})
