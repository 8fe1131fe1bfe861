"""Which pages may open the app's WebSockets: the app's own origin, scheme, host and port.

Channels' AllowedHostsOriginValidator compares the Origin's host name with ALLOWED_HOSTS
only: a page served on any other port of an allowed host (another local app, a dev server)
or over plain HTTP could drive the chat with the user's cookies. Here the Origin must be
the connection's own origin (the scheme it came in with, its Host header, port included;
that Host in ALLOWED_HOSTS) or one listed in CSRF_TRUSTED_ORIGINS, the same rule Django's
CSRF check applies to a form. Channels' OriginValidator does the comparing.
"""

from __future__ import annotations

from urllib.parse import urlparse

from channels.security.websocket import OriginValidator, WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host


def _header(scope, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin1")
    return ""


def _secure(scope) -> bool:
    """Came in over TLS: the server says so, or the proxy's header Django trusts does."""
    if scope.get("scheme") in ("wss", "https"):
        return True
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if not proxy:
        return False
    name, value = proxy
    header = name.removeprefix("HTTP_").replace("_", "-").lower().encode("latin1")
    return _header(scope, header).split(",")[0].strip() == value


def own_origin(scope) -> str | None:
    """The connection's own origin ("https://host:port"), or None when its Host is not served."""
    host = _header(scope, b"host").strip().lower()
    domain, _port = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]  # what Django's get_host() allows
    if not domain or not validate_host(domain, allowed):
        return None
    return f"{'https' if _secure(scope) else 'http'}://{host}"


class SameOriginValidator(OriginValidator):
    """Refuses (closes) a WebSocket whose Origin is not the app's own or a trusted one."""

    def __init__(self, application):
        super().__init__(application, allowed_origins=[])

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and not self.allowed(scope):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)

    def allowed(self, scope) -> bool:
        origin = _header(scope, b"origin")
        if not origin:
            return False  # every browser sends one; a page's script cannot remove it
        parsed = urlparse(origin.lower())
        patterns = [own_origin(scope), *settings.CSRF_TRUSTED_ORIGINS]
        # A CSRF_TRUSTED_ORIGINS entry may be "https://*.example.com": Channels' pattern
        # for a domain and its subdomains is "https://.example.com".
        patterns = [p.replace("://*.", "://.") for p in patterns if p]
        return any(self.match_allowed_origin(parsed, p) for p in patterns)
