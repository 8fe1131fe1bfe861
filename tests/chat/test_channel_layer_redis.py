"""With REDIS_URL the pages' live frames go through Redis (channels-redis): a page's socket
idle for longer than channels-redis's 5 s blocking read still receives what is sent later.

redis-py's default socket timeout is also 5 s: a read blocked for 5 s timed out and closed
the page's socket (1011) after 5-7 idle seconds. Checked with the layer settings.py builds,
in a process of its own started with REDIS_URL, against a real redis-server.
"""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

IDLE_THEN_RECEIVE = """
import asyncio, django
django.setup()
from channels.layers import get_channel_layer

async def main():
    layer = get_channel_layer()
    channel = await layer.new_channel()

    async def later():
        await asyncio.sleep(12)  # two of channels-redis's blocking reads, and more
        await layer.send(channel, {"type": "chat.frame", "text": "still here"})

    sender = asyncio.create_task(later())
    message = await asyncio.wait_for(layer.receive(channel), timeout=60)
    await sender
    print(type(layer).__name__, message["text"])

asyncio.run(main())
"""


def test_an_idle_page_socket_still_receives_later_frames_over_redis(redis_server, tmp_path):
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
        "DEBUG": "true",
        "REDIS_URL": redis_server.url,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
    }
    done = subprocess.run(
        [sys.executable, "-c", IDLE_THEN_RECEIVE],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "RedisChannelLayer still here"
