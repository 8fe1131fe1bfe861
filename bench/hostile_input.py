"""What one hostile message costs, and where that cost lands (issue 8).

1. Offline planning: the responder's request patterns before issue 8 (quoted below: a lazy
   topic followed by an overlapping trailing class, quadratic) against today's
   `chat.offline.plan_reply`, on "do you remember " + n question marks + "x". The old
   pattern is only run up to 20,000 characters (it needs ~50 s at 100,000).
2. The CPU steps a message goes through, on a 100,000-character adversarial message (the
   same, plus private markers, entities and accents) and on an ordinary 100-character one:
   parsing the frame, the private-span rule, the recall query, language detection, planning,
   and rendering a long answer's Markdown. All now run in a worker thread (or bounded).
3. The event loop while that message is answered: a ticker on the loop records the longest
   gap between two of its ticks during a whole turn (offline responder, memory off,
   through the WebSocket consumer), for the hostile message and for an ordinary one,
   interleaved.

Usage: .venv/bin/python bench/hostile_input.py [runs]
"""

import asyncio
import json
import re
import sys
import time

from _setup import ROOT, django_on_temp_db, summary

sys.path.insert(0, str(ROOT))
from tests.fixtures.hostile import ADVERSARIAL_MESSAGE  # noqa: E402

RUNS = int(sys.argv[1]) if len(sys.argv) > 1 else 15

# The recall pattern of chat/offline.py before issue 8, verbatim.
OLD_RECALL = re.compile(
    r"^\s*(?:what do you (?:know|remember) about|do you remember|what did i (?:tell|say)"
    r" (?:you )?about|que sais[- ]tu (?:de|du|des|sur|à propos de)|"
    r"te souviens[- ]tu (?:de|du|des)?|qu['’]est-ce que tu sais (?:de|sur))\s*(?P<topic>.+?)"
    r"[\s?.!]*$",
    re.IGNORECASE | re.DOTALL,
)
HOSTILE = ADVERSARIAL_MESSAGE
ORDINARY = "Do you remember where my sister Léa lives? I think I told you last week."


def _median_ms(fn, runs=RUNS) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return summary(samples)["median"]


def planning():
    from chat.offline import plan_reply

    tools = [{"name": "search_memories"}]
    print("\n1. offline planning, 'do you remember ' + n x '?' + 'x' (median ms)")
    print("| n | before (old pattern) | now (plan_reply) |")
    print("|---|---|---|")
    for n in (2_500, 5_000, 10_000, 20_000, 100_000):
        text = "do you remember " + "?" * n + "x"
        asked = [{"role": "user", "content": text}]
        now = _median_ms(lambda asked=asked: plan_reply(system="", messages=asked, tools=tools))
        old = (lambda text=text: OLD_RECALL.match(text)) if n <= 20_000 else None
        before = _median_ms(old, runs=3) if old else None
        shown = f"{before:.1f}" if before is not None else "not run (~50 s)"
        print(f"| {n:,} | {shown} | {now:.3f} |")


def steps():
    from chat.edge import parse_json
    from chat.markdown import render_markdown
    from chat.offline import plan_reply
    from ikario_rag.private import strip
    from memory.recall.prompts import detect_language
    from memory.recall.retrieval import searchable_text

    long_answer = ("A **bold** [link](/x) and `code`. " * 600) + "\n\n- item\n" * 500
    print("\n2. CPU steps, 100,000-character hostile message vs ordinary (median ms)")
    print("| step | hostile | ordinary | where it runs |")
    print("|---|---|---|---|")
    rows = [
        ("parse the frame (chat/edge.py)", lambda t: parse_json(json.dumps({"content": t})),
         "worker thread"),
        ("private-span rule (ikario_rag.private)", strip, "worker thread (via searchable_text)"),
        ("recall query (memory/recall/retrieval.py)", searchable_text, "worker thread"),
        ("language (memory/recall/prompts.py)", detect_language, "loop, first 2,000 chars"),
        ("offline plan (chat/offline.py)",
         lambda t: plan_reply(system="", messages=[{"role": "user", "content": t}],
                              tools=[{"name": "search_memories"}]), "worker thread"),
    ]  # fmt: skip
    for name, fn, where in rows:
        hostile = _median_ms(lambda fn=fn: fn(HOSTILE))
        ordinary = _median_ms(lambda fn=fn: fn(ORDINARY))
        print(f"| {name} | {hostile:.2f} | {ordinary:.3f} | {where} |")
    render_markdown.cache_clear()
    answer_ms = _median_ms(lambda: (render_markdown.cache_clear(), render_markdown(long_answer)))
    name = f"Markdown of a {len(long_answer):,}-char answer"
    print(f"| {name} | {answer_ms:.2f} | - | worker thread |")


async def _turn(user, content) -> float:
    """One turn through the consumer; the longest gap (ms) between two ticks of the loop."""
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
    gaps = []
    running = True

    async def ticker():
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    await communicator.send_to(text_data=json.dumps({"content": content}))
    while 'data-busy="0"' not in await communicator.receive_from(timeout=120):
        pass
    running = False
    await ticking
    await communicator.disconnect()
    return max(gaps) * 1000


async def loop_stalls():
    from django.contrib.auth import get_user_model

    user = await get_user_model().objects.acreate(username="bench")
    hostile, ordinary = [], []
    for _ in range(RUNS):
        hostile.append(await _turn(user, HOSTILE))
        ordinary.append(await _turn(user, ORDINARY))
    h, o = summary(hostile), summary(ordinary)
    print("\n3. longest event-loop stall during one whole turn (ms; ticker every 1 ms)")
    print("| message | median | p95 |")
    print("|---|---|---|")
    print(f"| hostile, 100,000 chars | {h['median']:.1f} | {h['p95']:.1f} |")
    print(f"| ordinary | {o['median']:.1f} | {o['p95']:.1f} |")
    print(f"ratio of medians hostile/ordinary: {h['median'] / o['median']:.2f}")


def main():
    django_on_temp_db(ANTHROPIC_API_KEY="")
    planning()
    steps()
    asyncio.run(loop_stalls())


if __name__ == "__main__":
    main()
