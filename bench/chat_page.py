"""The chat page's server time with 200 conversations of 50 messages each.

One user, 200 conversations x 50 messages (Markdown with code blocks and lists), built
in code on a throwaway SQLite file. Measured through Django's test Client (full
middleware, session auth, template rendering, no network):
  page (warm):  GET /c/<latest>/ with rendered Markdown cached (any visit after the first)
  page (cold):  the same, Markdown cache cleared before each request (a first visit)
  baseline:     GET /accounts/login/ logged out, the cheapest full page, run beside it
Also counts SQL queries per page (must not grow with the number of conversations).
Target: page (warm) <= 50 ms median.

Usage: .venv/bin/python bench/chat_page.py [iterations]
"""

import sys
import time

from _setup import django_on_temp_db, summary

CONVERSATIONS = 200
MESSAGES = 50


def build_data():
    from datetime import timedelta

    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from chat.models import Conversation, Message

    user = get_user_model().objects.create_user("reader")  # force_login: no password needed
    now = timezone.now()
    conversations = Conversation.objects.bulk_create(
        Conversation(user=user, title=f"Conversation {n}", pinned=n % 50 == 0)
        for n in range(CONVERSATIONS)
    )
    for n, conversation in enumerate(conversations):
        Conversation.objects.filter(pk=conversation.pk).update(
            updated_at=now - timedelta(hours=n * 3)
        )
    messages = []
    for conversation in conversations:
        for i in range(MESSAGES):
            if i % 2 == 0:
                messages.append(
                    Message(conversation=conversation, role="user", content=f"Question {i}?")
                )
            else:
                messages.append(
                    Message(
                        conversation=conversation,
                        role="assistant",
                        content=(
                            f"Answer {i} in **bold** with a list:\n\n- one\n- two\n\n"
                            f"```python\nprint({i})\n```\n\nAnd a [link](https://example.com)."
                        ),
                        usage={"input_tokens": 10, "output_tokens": 20},
                    )
                )
    Message.objects.bulk_create(messages, batch_size=1000)
    return user, Conversation.objects.filter(user=user).order_by("-updated_at").first()


def timed(client, url, iterations, before=None):
    samples = []
    for _ in range(iterations):
        if before:
            before()
        start = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, response.status_code
    return summary(samples)


def main(iterations):
    django_on_temp_db(DEBUG="false")
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from chat.markdown import render_markdown

    user, latest = build_data()
    client = Client()
    client.force_login(user)
    anonymous = Client()
    url = f"/c/{latest.pk}/"
    for _ in range(5):  # warm-up: template compilation, first Markdown renders
        client.get(url)
        anonymous.get("/accounts/login/")
    with CaptureQueriesContext(connection) as queries:
        body = client.get(url).content.decode()
    query_count = len(queries)  # now: DEBUG keeps logging queries into a bounded deque
    assert body.count('class="message ') == MESSAGES, body.count('class="message ')

    warm = timed(client, url, iterations)
    cold = timed(client, url, max(10, iterations // 4), before=render_markdown.cache_clear)
    base = timed(anonymous, "/accounts/login/", iterations)
    print(f"chat page, {CONVERSATIONS} conversations x {MESSAGES} messages, {iterations} GETs")
    print(f"  page (warm)  : median {warm['median']:.2f} ms  p95 {warm['p95']:.2f} ms")
    print(f"  page (cold)  : median {cold['median']:.2f} ms  p95 {cold['p95']:.2f} ms")
    print(f"  login page   : median {base['median']:.2f} ms  p95 {base['p95']:.2f} ms")
    print(f"  ratio warm/login: {warm['median'] / base['median']:.2f}x")
    print(f"  SQL queries per chat page: {query_count}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
