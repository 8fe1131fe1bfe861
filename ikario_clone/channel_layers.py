"""The channel layer the pages' live frames go through: Redis (channels-redis) when the app
has a REDIS_URL, so pages and answers may be in different processes.

Built here, not inline in settings.py, so tests run the very same configuration in process.
"""

from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff

# A pooled connection idle this long (s) is PINGed before it carries a frame: one left dead
# by a Redis restart is replaced then, not found dead by a page's frame minutes later.
HEALTH_CHECK_INTERVAL = 10
# A command that meets a dead connection reconnects and runs again, 0.2 s to 2 s apart, for
# ~11 s in all: time for a restarted Redis to listen again. (redis-py's asyncio client
# retries nothing by default, and its health check only reconnects through this; the
# asyncio Retry: the sync one would wrap a coroutine and retry nothing.)
RETRY = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=8)


def redis_layer(url: str, *, capacity: int) -> dict:
    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {
                    "address": url,
                    # redis-py's default socket timeout (5 s) equals channels-redis's blocking
                    # read (5 s): an idle page's socket timed out and closed (redis-py #4091).
                    "socket_timeout": 30,
                    "socket_keepalive": True,
                    "health_check_interval": HEALTH_CHECK_INTERVAL,
                    "retry": RETRY,
                }
            ],
            "capacity": capacity,
        },
    }
