"""Search over past chats, and what a turn spends assembling a long conversation's history.

1. Search: one user with 10,000 conversations x 20 messages (200,000 messages, ~45 words
   each, a 3,000-word vocabulary drawn Zipf-like, some names), plus another user with 1,000
   conversations whose messages must never show. GET /api/conversations/search through
   Django's test Client (session auth, full middleware, JSON), queries of every kind
   (a common word, a rare one, two words, a prefix, a name, no match), interleaved with the
   comparison: the same words found without an index (`content__icontains` on every word,
   scoped to the user, newest first: what a search without FTS would do).
2. History: a 300-message conversation (150 exchanges of ~1,070 characters). **now** =
   chat.history.assemble with its summaries made (every turn after the first);
   **first** = the same with no summary yet, all made on the spot extractively (once per
   conversation, when no background job has run); **before** = the query this replaced
   (the last 100 messages, whole, nothing said about the rest), interleaved.

Usage: .venv/bin/python bench/past_chats.py [search_requests] [history_runs]
"""

import random
import sys
import time

from _setup import ROOT, django_on_temp_db, summary

sys.path.insert(0, str(ROOT))

CONVERSATIONS, PER_CONVERSATION = 10_000, 20
QUERIES = ["plan", "glacier", "budget train", "mount", "Okafor", "zzzyxq", "weekend trip"]


def vocabulary(rng):
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "pa", "do", "fi"]
    words = {"plan", "trip", "budget", "train", "glacier", "mountain", "weekend", "garden"}
    while len(words) < 3_000:
        words.add("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def build_search_data():
    from django.contrib.auth import get_user_model

    from chat.models import Conversation, Message

    rng = random.Random(7)
    words = vocabulary(rng)
    weights = [1 / (n + 1) for n in range(len(words))]  # Zipf-like: a few words are common
    names = ["Okafor", "Chamonix", "Lisbon", "Kyoto", "Marta", "Tobias"]

    def text():
        picked = rng.choices(words, weights, k=45)
        if rng.random() < 0.05:
            picked[rng.randrange(45)] = rng.choice(names)
        return " ".join(picked).capitalize() + "."

    User = get_user_model()
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    started = time.perf_counter()
    for owner, count in ((alice, CONVERSATIONS), (bob, CONVERSATIONS // 10)):
        for batch in range(0, count, 500):
            chats = Conversation.objects.bulk_create(
                [Conversation(user=owner, title=f"Chat {n}") for n in range(batch, batch + 500)]
            )
            Message.objects.bulk_create(
                [
                    Message(conversation=chat, role=("user", "assistant")[n % 2], content=text())
                    for chat in chats
                    for n in range(PER_CONVERSATION)
                ],
                batch_size=2_000,
            )
    print(
        f"built {Message.objects.count()} messages in {time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return alice


def bench_search(alice, requests):
    from django.test import Client

    from chat.models import Message

    client = Client()
    client.force_login(alice)

    def api(query):
        response = client.get("/api/conversations/search", {"q": query, "limit": 20})
        assert response.status_code == 200, response.content
        return response.json()["results"]

    def scan(query):
        rows = Message.objects.filter(conversation__user=alice)
        for word in query.lower().split():
            rows = rows.filter(content__icontains=word)
        return list(rows.order_by("-id").values("id", "content")[:20])

    for query in QUERIES:  # warm up, and show what each query finds
        print(f"  {query!r}: {len(api(query))} results via FTS, {len(scan(query))} via scan")
    timings = {"api": [], "scan": []}
    per_query = {q: [] for q in QUERIES}
    for n in range(requests):
        query = QUERIES[n % len(QUERIES)]
        start = time.perf_counter()
        api(query)
        elapsed = (time.perf_counter() - start) * 1000
        timings["api"].append(elapsed)
        per_query[query].append(elapsed)
        if n % 4 == 0:  # the scan is slow: a quarter as many runs, interleaved
            start = time.perf_counter()
            scan(query)
            timings["scan"].append((time.perf_counter() - start) * 1000)
    return timings, per_query


def bench_history(runs):
    from django.contrib.auth import get_user_model

    from chat import history
    from chat.models import ConversationSummary, Message
    from tests.fixtures.long_chat import make_long_conversation

    user = get_user_model().objects.create_user("carol")
    chat = make_long_conversation(user, messages=300)
    question = Message.objects.create(conversation=chat, role="user", content="And now?")
    before_id = question.pk + 1
    budget = 24_000

    def before():
        # What chat/turn.py did until now: the last 100 messages, whole.
        rows = list(
            Message.objects.filter(conversation=chat, pk__lt=before_id)
            .exclude(status=Message.Status.ERROR)
            .exclude(content="")
            .order_by("-created_at", "-id")
            .values("role", "content")[:100]
        )
        rows.reverse()
        return history.api_messages(rows)

    timings = {"now": [], "first": [], "before": []}
    for n in range(runs):
        start = time.perf_counter()
        history.assemble(conversation_id=chat.pk, before_id=before_id, budget=budget)
        timings["now"].append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        before()
        timings["before"].append((time.perf_counter() - start) * 1000)
        if n % 5 == 0:
            ConversationSummary.objects.filter(conversation=chat).delete()
            start = time.perf_counter()
            history.assemble(conversation_id=chat.pk, before_id=before_id, budget=budget)
            timings["first"].append((time.perf_counter() - start) * 1000)
    sent = history.assemble(conversation_id=chat.pk, before_id=before_id, budget=budget)
    sizes = {
        "now": history.estimate_tokens(sent.summary_block)
        + sum(history.estimate_tokens(m["content"]) for m in sent.messages),
        "before": sum(history.estimate_tokens(m["content"]) for m in before()),
    }
    shape = (sent.in_full, sent.summarised, sent.left_out)
    return timings, sizes, shape


def show(label, samples):
    s = summary(samples)
    print(f"  {label:<34} median {s['median']:8.2f} ms   p95 {s['p95']:8.2f} ms   (n={s['n']})")
    return s


def main():
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 50
    django_on_temp_db(DEBUG="false", CHAT_SUMMARY_LLM="false", ANTHROPIC_API_KEY="")
    alice = build_search_data()

    print(f"Search, {CONVERSATIONS} conversations x {PER_CONVERSATION} messages:")
    timings, per_query = bench_search(alice, requests)
    api = show("GET /api/conversations/search", timings["api"])
    scan = show("no index (icontains scan)", timings["scan"])
    print(f"  scan/api median ratio: {scan['median'] / api['median']:.1f}x")
    for query, samples in per_query.items():
        show(f"  q={query!r}", samples)

    print("History of a 300-message conversation (budget 24,000 tokens):")
    timings, sizes, shape = bench_history(runs)
    now = show("now: summaries made", timings["now"])
    show("first: summaries made on the spot", timings["first"])
    before = show("before: last 100 messages", timings["before"])
    print(f"  now/before median ratio: {now['median'] / before['median']:.1f}x")
    print(
        f"  sent: now ~{sizes['now']} tokens ({shape[0]} messages in full, {shape[1]} "
        f"exchanges summarised, {shape[2]} left out); before ~{sizes['before']} tokens "
        "(100 messages, 100 earlier ones dropped silently)"
    )


if __name__ == "__main__":
    main()
