"""The health endpoints a proxy or process manager polls (docs/FAULTS.md, "Health checks").

`/health/live`: the process answers; it touches nothing else, so a database outage never
gets a web process restarted. `/health/ready`: the parts a user's request needs answer (the
database, Redis when REDIS_URL is set, each memory server the app reaches over HTTP), each
within HEALTH_CHECK_TIMEOUT seconds: 200, or 503 naming the part that failed. No login, and
nothing secret in the body: parts are named by host and port, failures by their kind.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx
import redis
from django.conf import settings
from django.db import connections
from django.http import JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

OK = "ok"


@never_cache
@require_GET
def live(request):
    return JsonResponse({"status": "live"})


@never_cache
@require_GET
def ready(request):
    checks = {"database": _database()}
    if settings.REDIS_URL:
        checks["redis"] = _redis(settings.REDIS_URL)
    for url in memory_server_urls():
        checks[f"memory server {_where(url)}"] = _memory_server(url)
    failed = sorted(part for part, said in checks.items() if said != OK)
    body = {"status": "unavailable" if failed else "ready", "checks": checks}
    if failed:
        body["failed"] = failed
    return JsonResponse(body, status=503 if failed else 200)


def memory_server_urls() -> list[str]:
    """The memory servers this app reaches over HTTP (none when memory is off, or when each
    process starts a server of its own over stdio)."""
    if not settings.MCP_MEMORY_ENABLED:
        return []
    return list(settings.MCP_IKARIO_SERVER_URLS) or [
        url for url in [settings.MCP_IKARIO_SERVER_URL] if url
    ]


def _database() -> str:
    connection = connections["default"]
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:
        connection.close_if_unusable_or_obsolete()
        return _failed(error)
    return OK


def _redis(url: str) -> str:
    timeout = settings.HEALTH_CHECK_TIMEOUT
    client = redis.Redis.from_url(url, socket_timeout=timeout, socket_connect_timeout=timeout)
    try:
        client.ping()
    except Exception as error:
        return _failed(error)
    finally:
        client.close()
    return OK


def _memory_server(url: str) -> str:
    """Any HTTP answer below 500 (a 401 without the token included) means the server's
    process is up and serving; its own health is on the memory indicator."""
    try:
        status = httpx.get(url, timeout=settings.HEALTH_CHECK_TIMEOUT).status_code
    except Exception as error:
        return _failed(error)
    return OK if status < 500 else f"failed: HTTP {status}"


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port}" if parts.port else str(parts.hostname)


def _failed(error: Exception) -> str:
    return f"failed: {type(error).__name__}"  # the kind only: messages may name credentials
