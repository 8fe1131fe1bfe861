"""Fair shares of the memory between users, in the app: one user's load never pushes
another's recall past its deadline.

The app reaches the memory server through one client; a call a view sends waits there with
everyone else's. So, per user:

- MEMORY_API_RATE (default "120/m"): calls to the memory's JSON API (/api/memory/...);
- MEMORY_BULK_RATE ("10/h"): imports and resets (each a background job, memory/client/jobs.py,
  one at a time whatever the limits: a unique constraint on the user's job under way);
- MEMORY_USER_CALLS (4): a user's memory requests under way at once in this process. One
  more is refused at once rather than queued in the client, where it would have waited,
  timed out and been reported failed while the server went on and stored it.

Every request is first within its share of the web process (ikario_clone/fair_shares.py,
before Django). What is over a limit here gets 429 with Retry-After (MemoryBusy:
api.error_response), naming the limit. The counts are django-ratelimit's, in Django's
cache: per process with the default local-memory cache, shared with a shared cache (Redis,
Memcached) when several web processes serve. MEMORY_LIMITS_ENABLED = False turns them all
off.
"""

from __future__ import annotations

import collections
import contextlib
import threading
from collections.abc import Iterator

from django.conf import settings
from django_ratelimit.core import get_usage

from memory.client.errors import MemoryBusy


def enabled() -> bool:
    return bool(settings.MEMORY_LIMITS_ENABLED)


def _user_key(group, request) -> str:
    return str(request.user.pk)


def check_rate(request, setting: str) -> None:
    """Count this request against the user's `setting` rate; MemoryBusy when over it."""
    rate = getattr(settings, setting)
    if not enabled() or not rate:
        return
    usage = get_usage(request, group=setting, key=_user_key, rate=rate, increment=True)
    if usage and usage["should_limit"]:
        raise MemoryBusy(
            f"too many requests: at most {rate} ({setting})",
            limit=setting,
            retry_after=usage["time_left"],
        )


_lock = threading.Lock()
_under_way: collections.Counter[int] = collections.Counter()


def most_at_once() -> int:
    return int(settings.MEMORY_USER_CALLS)


@contextlib.contextmanager
def one_of_a_few(user) -> Iterator[None]:
    """Hold one of the user's MEMORY_USER_CALLS places for a request; MemoryBusy when all
    are taken."""
    if not enabled():
        yield
        return
    most = most_at_once()
    with _lock:
        if _under_way[user.pk] >= most:
            raise MemoryBusy(
                f"too many requests at once: at most {most} (MEMORY_USER_CALLS)",
                limit="MEMORY_USER_CALLS",
                retry_after=1,
            )
        _under_way[user.pk] += 1
    try:
        yield
    finally:
        with _lock:
            _under_way[user.pk] -= 1
            if _under_way[user.pk] <= 0:
                del _under_way[user.pk]
