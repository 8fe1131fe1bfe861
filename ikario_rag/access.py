"""Who may call the server over HTTP (TCP), and on which namespaces.

A server on a TCP port is reachable by every process of the machine (every local user), or
of the network: over streamable HTTP each request must carry a bearer token
(`Authorization: Bearer <token>`) from the server's environment:

- IKARIO_TOKEN: one token with every namespace (the web app's, when it is the only client);
- IKARIO_TOKENS: a JSON object, token -> the namespaces it may use: "*" (all), or a list of
  names where one ending in "*" is a prefix (`{"<app-1 token>": ["user-*"], "<tool>":
  ["user-7"]}`): a bearer token per app, several apps on one memory server.

The SDK checks the header (its BearerAuthBackend and RequireAuthMiddleware, with `Verifier`
below as its TokenVerifier: a missing or unknown token is a 401 before any MCP message is
read); every tool that takes a namespace then asks `allowed()`, and memory_stats without a
namespace counts only the namespaces the token may use (`grant_of`). Tokens are compared as
SHA-256 digests with hmac.compare_digest, against every configured one: the time taken says
nothing about how much of a token was right. Refused requests are logged without the token.

stdio carries no token: the process that spawned the server owns it, and has every
namespace.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken

from ikario_rag import config, validate
from ikario_rag.errors import InputError

log = logging.getLogger("ikario_rag.access")

EVERY = "*"


class BadCredentials(ValueError):
    """IKARIO_TOKEN / IKARIO_TOKENS cannot be read; the message never quotes a token."""


class NotAllowed(InputError):
    """The caller's token does not cover the namespace it asked for."""


@dataclass(frozen=True)
class Grant:
    """The namespaces one token may use: all of them, or some names and name prefixes."""

    label: str  # how the log names the token (never the token itself)
    everything: bool = False
    names: frozenset[str] = frozenset()
    prefixes: tuple[str, ...] = ()

    @classmethod
    def of(cls, label: str, spec: Any) -> Grant:
        if spec == EVERY:
            return cls(label, everything=True)
        if not isinstance(spec, list) or not all(isinstance(s, str) and s for s in spec):
            raise BadCredentials(f'{label}: give "*" or a list of namespaces (a name or "prefix*")')
        if EVERY in spec:
            return cls(label, everything=True)
        names = frozenset(s for s in spec if not s.endswith("*"))
        prefixes = tuple(s[:-1] for s in spec if s.endswith("*"))
        return cls(label, names=names, prefixes=prefixes)

    def allows(self, namespace: str) -> bool:
        return self.everything or namespace in self.names or namespace.startswith(self.prefixes)


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


class Credentials:
    """The tokens a server accepts, each with its Grant (kept as digests only)."""

    def __init__(self, grants: Mapping[str, Grant]) -> None:
        self._grants = [(_digest(token), grant) for token, grant in grants.items()]

    def __bool__(self) -> bool:
        return bool(self._grants)

    def __len__(self) -> int:
        return len(self._grants)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Credentials:
        grants: dict[str, Grant] = {}
        environment = config.settings(environ)
        single = environment.token
        if single:
            grants[single] = Grant("IKARIO_TOKEN", everything=True)
        raw = environment.tokens
        if raw:
            try:
                table = json.loads(raw)
            except ValueError:
                raise BadCredentials("IKARIO_TOKENS is not a JSON object") from None
            if not isinstance(table, dict):
                raise BadCredentials("IKARIO_TOKENS is not a JSON object")
            for number, (token, spec) in enumerate(table.items(), start=1):
                label = f"IKARIO_TOKENS #{number}"
                if not token.strip():
                    raise BadCredentials(f"{label}: empty token")
                grants[token.strip()] = Grant.of(label, spec)
        return cls(grants)

    def grant_for(self, token: str) -> Grant | None:
        """The grant of `token`, or None; compares with every token, in constant time each."""
        presented = _digest(token)
        found = None
        for digest, grant in self._grants:
            if hmac.compare_digest(presented, digest) and found is None:
                found = grant
        return found


class Verifier:
    """The SDK's TokenVerifier over Credentials: the grant travels in the AccessToken."""

    def __init__(self, credentials: Credentials) -> None:
        self.credentials = credentials

    async def verify_token(self, token: str) -> AccessToken | None:
        grant = self.credentials.grant_for(token)
        if grant is None:
            return None
        return AccessToken(token="", client_id=grant.label, scopes=[], claims={"grant": grant})


def grant_of(request: Any) -> Grant | None:
    """The grant of the token `request` carried; None when the request carried none because
    its transport needs none (stdio has no request): every namespace."""
    scope = getattr(request, "scope", None) or {}
    user = scope.get("user")
    if isinstance(user, AuthenticatedUser):
        return (user.access_token.claims or {}).get("grant")
    return None


def allowed(request: Any, namespace: Any, tool: str) -> str:
    """The validated namespace, if the request's token may use it; NotAllowed otherwise."""
    ns = validate.namespace(namespace)
    grant = grant_of(request)
    if grant is not None and not grant.allows(ns):
        log.warning("refused %s on namespace %s for %s", tool, validate.shown(ns), grant.label)
        raise NotAllowed(f"namespace {validate.shown(ns)} is not allowed for this credential")
    return ns


# Why an HTTP request was refused before any MCP message was read, by status.
_REFUSALS = {
    401: "no credential, or an unknown one",
    403: "a forbidden Origin",
    421: "a Host that is not this server's",
}


class LogRefusals:
    """ASGI middleware: one warning per refused request (who, what, why; never a header)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def watch(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and message["status"] in _REFUSALS:
                client = scope.get("client") or ("?", "?")
                log.warning(
                    "refused %s %s from %s:%s: %s (HTTP %d)",
                    scope.get("method"),
                    scope.get("path"),
                    client[0],
                    client[1],
                    _REFUSALS[message["status"]],
                    message["status"],
                )
            await send(message)

        await self.app(scope, receive, watch)
