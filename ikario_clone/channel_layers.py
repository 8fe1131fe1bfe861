"""The channel layer the pages' live frames go through: Redis (channels-redis) when the app
has a REDIS_URL, so pages and answers may be in different processes.

Built here, not inline in settings.py, so tests run the very same configuration in process.
"""


def redis_layer(url: str, *, capacity: int) -> dict:
    return {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            # redis-py's default socket timeout (5 s) equals channels-redis's blocking
            # read (5 s): an idle page's socket timed out and closed (redis-py #4091).
            "hosts": [{"address": url, "socket_timeout": 30, "socket_keepalive": True}],
            "capacity": capacity,
        },
    }
