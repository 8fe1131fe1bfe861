"""Time the app adds to a streamed turn, over calling the same fake API directly.

Side by side, interleaved, in one process and one event loop:
  direct: AsyncAnthropic(...).messages.stream(...) against the fake Messages API
  app:    the chat WebSocket consumer (Channels' WebsocketCommunicator): the user's message
          saved, the turn run through chat/turn.py (same SDK, same fake), every token
          escaped and sent as an htmx frame, the answer rendered and persisted.
The fake streams a 60-word answer with no artificial delay. Memory is off (its cost is
measured by bench/auto_retrieval.py). Target: app - direct <= 30 ms median.

Usage: .venv/bin/python bench/chat_turn.py [iterations]
"""

import asyncio
import json
import sys
import time

from _setup import ROOT, django_on_temp_db, summary

sys.path.insert(0, str(ROOT))
from tests.fixtures.fake_anthropic import FakeAnthropic  # noqa: E402

ANSWER = " ".join(f"word{n}" for n in range(60))
PROMPT = [{"role": "user", "content": "Tell me sixty words."}]


async def direct_turn(client, model):
    async with client.messages.stream(model=model, max_tokens=1024, messages=PROMPT) as stream:
        async for _ in stream.text_stream:
            pass
        await stream.get_final_message()


async def app_turn(user):
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from chat.models import Conversation
    from chat.routing import websocket_urlpatterns

    conversation = await Conversation.objects.acreate(user=user)
    communicator = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.pk}/"
    )
    communicator.scope["user"] = user
    await communicator.connect()
    start = time.perf_counter()
    await communicator.send_to(text_data=json.dumps({"content": PROMPT[0]["content"]}))
    while 'data-busy="0"' not in await communicator.receive_from(timeout=10):
        pass
    elapsed = time.perf_counter() - start
    await communicator.disconnect()
    return elapsed


async def main(iterations):
    import anthropic
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from chat.models import Message

    user = await get_user_model().objects.acreate(username="bench")
    client = anthropic.AsyncAnthropic(api_key="k", base_url=settings.ANTHROPIC_BASE_URL)
    model = settings.ANTHROPIC_MODEL
    direct, app = [], []
    for i in range(iterations + 5):
        start = time.perf_counter()
        await direct_turn(client, model)
        d = time.perf_counter() - start
        a = await app_turn(user)
        if i >= 5:  # warm-up: imports, connection pools, template compilation
            direct.append(d * 1000)
            app.append(a * 1000)
    saved = await Message.objects.filter(role="assistant", status="complete").acount()
    assert saved == iterations + 5, saved
    return summary(direct), summary(app), [a - d for a, d in zip(app, direct, strict=True)]


if __name__ == "__main__":
    iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with FakeAnthropic() as fake:
        fake.default_reply = ANSWER
        django_on_temp_db(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY="sk-bench")
        direct, app, diffs = asyncio.run(main(iterations))
    import statistics

    print(f"streamed turn, 60-word answer, {iterations} iterations each, interleaved")
    print(
        f"  direct SDK -> fake API : median {direct['median']:.2f} ms  p95 {direct['p95']:.2f} ms"
    )
    print(f"  app (WebSocket turn)   : median {app['median']:.2f} ms  p95 {app['p95']:.2f} ms")
    print(f"  added by the app       : median {statistics.median(diffs):.2f} ms per turn")
    print(f"  ratio app/direct       : {app['median'] / direct['median']:.2f}x")
