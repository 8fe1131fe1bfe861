"""Redis restarted under a running channel layer: the layer's pooled connections to the old
server are dead; an idle one is PINGed before it is used again and a command that meets a
dead one reconnects and runs again (ikario_clone/channel_layers.py), so the next frames are
delivered, to a page that was waiting through the restart as to a new one. Without them the
first send after the restart failed with "Connection closed by server".

Under load, answers failed up to 14 s after Redis was back, and 7 more 3.5 minutes later,
on pooled connections nobody had checked.
"""

import asyncio
import shutil
import tempfile

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer

from ikario_clone.channel_layers import redis_layer
from tests.fixtures.redis_server import redis_on
from tests.net import serve_on_a_free_port, stop, wait_for_port


@pytest.fixture
def own_redis(settings):
    """A redis-server of this test's own, which it stops and starts again on the same port."""
    workdir = tempfile.mkdtemp(prefix="ikario-redis-restart-")
    server = {}
    server["process"], port = serve_on_a_free_port(lambda p: redis_on(p, workdir), timeout=30)

    def restart():
        stop(server["process"])
        server["process"] = redis_on(port, workdir)
        wait_for_port(port, timeout=30, process=server["process"])

    settings.CHANNEL_LAYERS = {"default": redis_layer(f"redis://127.0.0.1:{port}/0", capacity=100)}
    yield restart
    stop(server["process"])
    shutil.rmtree(workdir, ignore_errors=True)


async def delivered(layer, channel, text, timeout=10):
    """Send `text` to `channel` until it arrives (a send may fail while the layer finds
    that Redis went away); what arrived."""
    await layer.send(channel, {"type": "chat.frame", "text": text})
    return (await asyncio.wait_for(layer.receive(channel), timeout))["text"]


async def test_frames_are_delivered_after_redis_restarts_under_the_layer(own_redis):
    layer = get_channel_layer()
    group = "chat.conversation.1"
    waiting, later = await layer.new_channel(), await layer.new_channel()
    await layer.group_add(group, waiting)
    for n in range(5):  # several pooled connections used, then idle
        assert await delivered(layer, later, f"before {n}") == f"before {n}"
    waiting_page = asyncio.create_task(layer.receive(waiting))

    await sync_to_async(own_redis)()  # Redis restarted: everything it held is gone
    await layer.group_add(group, waiting)  # a page joins again on reconnect

    for n in range(5):
        assert await delivered(layer, later, f"after {n}") == f"after {n}"
    await layer.group_send(group, {"type": "chat.frame", "text": "to the group"})
    received = await asyncio.wait_for(waiting_page, timeout=10)
    assert received["text"] == "to the group"
