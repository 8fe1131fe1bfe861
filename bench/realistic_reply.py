"""A reply as a user feels it, with the background worker idle and busy.

The app runs as in production, as plain processes this script starts on a temp dir (the
database, migrated; the memory index; each process's log):

- the memory server over streamable HTTP with a bearer token (`python -m ikario_rag
  --transport streamable-http`, IKARIO_TOKEN; the others reach it by MCP_IKARIO_SERVER_URL);
- Daphne serving ikario_clone.asgi;
- `manage.py db_worker --nice 10`, the worker as a process of its own at a lower priority;
- a scripted model: tests/fixtures/fake_anthropic.py in a process of its own, paced like a
  real one. A chat turn first calls `search_memories` (its first event after 0.5 s), then
  answers: first token 0.5 s after the tool's result, then 150 tokens at 50 tokens/s (3 s).
  The worker's calls (extraction's forced `record_facts`, summaries, the profile) are
  answered by the same fake once generated (0.4 s, then 60 tokens/s).

The user is a browser: logged in through the login form, it opens a new conversation's
WebSocket (/ws/conversations/<id>/), sends a message (memory on: auto-recall, then the
tool's search, on the same memory server the worker writes to) and times the frames as
they arrive: time to first token (the first text frame) and the whole reply (the frame
that says the turn is over).

Conditions, interleaved (idle, busy, busy, idle, ...) so that drift hits both:
- idle: no task queued or running, every vector of the memory server written;
- busy: a backlog queued just before the message: `save_conversation` of BACKLOG
  conversations of EXCHANGES exchanges each, of four users (the user who chats among them),
  each task learning its exchanges' facts, then saving it whole; the message is sent once the
  worker has claimed the first task. What is still queued after the reply is dropped (the
  next sample starts idle again).

Reported: the medians per condition, busy/idle at the median with a 95 % bootstrap
interval (the pairs of a round resampled whole), the number of replies. Target: <= 1.10.

Usage: .venv/bin/python bench/realistic_reply.py [--replies 20] [--backlog 4]
       [--exchanges 12] [--keep]   (--keep: leave the temp dir, its logs, behind)
       [--code DIR]  (run the app of another checkout, e.g. `git archive BRANCH | tar -x -C
                      DIR`; this script, its fake model and the venv stay this checkout's)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from _setup import ROOT, median_ratio, summary, wait_indexed

sys.path.insert(0, str(ROOT))
from tests.fixtures.scripted_model import ANSWER, CHAT_PACE  # noqa: E402

PYTHON = str(ROOT / ".venv" / "bin" / "python")
DAPHNE = str(ROOT / ".venv" / "bin" / "daphne")
PASSWORD = secrets.token_urlsafe(16)  # the users the bench makes log in with it
USERS = ("alice", "bruno", "chloe", "dmitri")  # alice chats; the backlog is everyone's

TOPICS = (
    ("hiking", "the ridge walk above Grenoble", "a pair of boots that hurt on descents"),
    ("piano", "the Chopin nocturne in E minor", "practising scales every morning"),
    ("work", "the migration of the billing service", "a review with the team on Thursday"),
    ("cooking", "a lentil curry for eight people", "my sister who is vegetarian"),
    ("travel", "a week in Lisbon in April", "trains rather than planes"),
    ("garden", "tomatoes on the balcony", "aphids on the basil"),
)


# --- the app's processes ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port: int, process: subprocess.Popen, log: Path, timeout=300.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            sys.exit(f"{process.args[:3]} exited ({process.returncode}); see {log}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    sys.exit(f"nothing listens on {port} after {timeout:.0f} s; see {log}")


class App:
    """The processes of the app, started and stopped together."""

    def __init__(self, tmp: Path, code: Path):
        self.tmp = tmp
        self.code = code
        self.processes: list[subprocess.Popen] = []
        self.named: dict[str, subprocess.Popen] = {}
        self.web_port = free_port()
        memory_port = free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(code),
            "DJANGO_SETTINGS_MODULE": "ikario_clone.settings",
            "DEBUG": "true",  # plain HTTP on 127.0.0.1, as `make run`
            "LOG_LEVEL": "INFO",
            "DATABASE_URL": f"sqlite:///{tmp}/db.sqlite3",
            "IKARIO_INDEX_DIR": str(tmp / "index"),
            "IKARIO_TOKEN": secrets.token_urlsafe(32),
            "IKARIO_PORT": str(memory_port),
            "MCP_IKARIO_SERVER_URL": f"http://127.0.0.1:{memory_port}/mcp",
            "ANTHROPIC_API_KEY": "sk-bench",
            "MCP_MEMORY_ENABLED": "true",
            "MEMORY_EXTRACTION": "true",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "ANONYMIZED_TELEMETRY": "False",
        }
        self.memory_port = memory_port

    def cpu_seconds(self) -> dict[str, float]:
        """CPU time each process of the app has used so far (Linux /proc; empty elsewhere)."""
        used = {}
        tick = os.sysconf("SC_CLK_TCK")
        for name, process in self.named.items():
            # By thread: a process's threads at a lower priority (nice > 0) apart.
            for task in Path(f"/proc/{process.pid}/task").glob("*"):
                try:
                    fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                key = f"{name} (nice {fields[16]})"
                used[key] = used.get(key, 0) + (int(fields[11]) + int(fields[12])) / tick
        return used

    def spawn(self, name: str, args: list[str], **kwargs) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "wb")  # noqa: SIM115 - open for the process's life
        process = subprocess.Popen(
            args, cwd=self.code, env=self.env, stdout=log, stderr=subprocess.STDOUT, **kwargs
        )
        self.processes.append(process)
        self.named[name] = process
        return process

    def start(self) -> None:
        fake = subprocess.Popen(
            [PYTHON, "-m", "tests.fixtures.scripted_model"],
            cwd=ROOT,
            env={**self.env, "PYTHONPATH": str(ROOT)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.processes.append(fake)
        self.named["model"] = fake
        self.env["ANTHROPIC_BASE_URL"] = fake.stdout.readline().strip()
        memory = self.spawn(
            "memory",
            [PYTHON, "-m", "ikario_rag", "--transport", "streamable-http"],
        )
        wait_port(self.memory_port, memory, self.tmp / "memory.log")
        # This process reads and writes the same database and memory server (set-up,
        # the backlog, the queue's state between samples).
        os.environ.update(self.env, LOG_LEVEL="WARNING")
        sys.path.insert(0, str(self.code))
        import django

        django.setup()
        from django.core.management import call_command

        from memory.client import services

        call_command("migrate", verbosity=0)
        services.wait_until_ready(300)
        web = self.spawn(
            "daphne",
            [DAPHNE, "-b", "127.0.0.1", "-p", str(self.web_port), "ikario_clone.asgi:application"],
        )
        wait_port(self.web_port, web, self.tmp / "daphne.log")
        self.spawn("worker", [PYTHON, "manage.py", "db_worker", "--nice", "10", "--no-reload"])

    def stop(self) -> None:
        """The worker first, then the web app, then what they talk to."""
        for process in reversed(self.processes):
            if process.stdin:
                process.stdin.close()
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


# --- what the bench does in the database ----------------------------------------------


def exchange_text(topic, n: int, seed: str) -> tuple[str, str]:
    name, thing, detail = topic
    question = (
        f"About {name} again ({seed}, {n}): I keep thinking about {thing}. Last time you "
        f"said something about {detail}; what should I do this week, step by step?"
    )
    answer = " ".join(
        f"Step {k}: for {thing}, given {detail}, try a small change on day {k + n} and "
        f"note how it went, so that we can compare next time ({seed})."
        for k in range(1, 7)
    )
    return question, answer


def make_backlog(users, backlog: int, exchanges: int, seed: str) -> list[int]:
    """BACKLOG conversations of EXCHANGES exchanges, the users' in turn: their ids."""
    from tests.fixtures.builders import make_conversation

    ids = []
    for k in range(backlog):
        topic = TOPICS[k % len(TOPICS)]
        said = []
        for n in range(exchanges):
            said += exchange_text(topic, n, f"{seed}-{k}")
        chat = make_conversation(users[k % len(users)], f"{topic[0]} {seed}-{k}", *said)
        ids.append(chat.pk)
    return ids


def queue_backlog(conversation_ids: list[int], extractions: int = 0) -> None:
    """The worker's backlog: each conversation's save_conversation task, which learns its
    exchanges' facts (the extraction model's calls) and saves it whole as a backup."""
    from memory.learning.conversations import save_conversation

    for pk in conversation_ids:
        save_conversation.enqueue(pk)


def queued() -> tuple[int, int]:
    from django_tasks_db.models import DBTaskResult

    tasks = DBTaskResult.objects
    return tasks.filter(status="RUNNING").count(), tasks.filter(status="READY").count()


def settle(timeout=300.0) -> None:
    """Idle again: queued tasks dropped, the running one finished, every vector written."""
    from django_tasks_db.models import DBTaskResult

    deadline = time.monotonic() + timeout
    while True:
        DBTaskResult.objects.filter(status="READY").delete()
        if queued() == (0, 0):
            break
        if time.monotonic() > deadline:
            sys.exit("the worker did not finish its task")
        time.sleep(0.1)
    wait_indexed(timeout)


def wait_claimed(timeout=120.0) -> None:
    deadline = time.monotonic() + timeout
    while queued()[0] == 0:
        if time.monotonic() > deadline:
            sys.exit("the worker claimed nothing: is db_worker running? (see worker.log)")
        time.sleep(0.01)


def login(port: int, username: str) -> str:
    """The session cookie a browser gets from the login form."""
    import httpx

    base = f"http://127.0.0.1:{port}"
    with httpx.Client(base_url=base) as client:
        page = client.get("/accounts/login/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
        done = client.post(
            "/accounts/login/",
            data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            headers={"Referer": f"{base}/accounts/login/"},
        )
        if done.status_code != 302 or "sessionid" not in client.cookies:
            sys.exit(f"login failed: {done.status_code}")
        return client.cookies["sessionid"]


# The frames that mark a reply's steps, in the order they come (the first frame that matches).
STEPS = (
    # the user's message, saved
    ("shown", lambda frame: 'hx-swap-oob="beforeend:#messages"' in frame),
    # the tool call: after the recall and the model's first round
    ("tool", lambda frame: 'hx-swap-oob="beforeend:#tools-' in frame),
    # its result, the search done: the call's element swapped whole
    ("tool done", lambda frame: frame.startswith("<details")),
    ("first token", lambda frame: 'hx-swap-oob="beforeend:#stream-' in frame),
    ("whole", lambda frame: 'data-busy="0"' in frame),
)


async def reply(port: int, session: str, conversation_id: int, text: str) -> dict:
    """{step: seconds after the message was sent}, as the page's socket sees the frames."""
    from websockets.asyncio.client import connect

    url = f"ws://127.0.0.1:{port}/ws/conversations/{conversation_id}/"
    async with connect(
        url,
        origin=f"http://127.0.0.1:{port}",
        additional_headers={"Cookie": f"sessionid={session}"},
        max_size=None,
    ) as ws:
        start = time.perf_counter()
        await ws.send(json.dumps({"content": text}))
        seen = {}
        async for frame in ws:
            now = time.perf_counter() - start
            for step, matches in STEPS:
                if step not in seen and matches(frame):
                    seen[step] = now
            if "whole" in seen:
                return seen
    raise RuntimeError("the socket closed before the reply ended")


QUESTIONS = (
    "What do you remember about my hiking plans? Suggest a route for Saturday.",
    "Given what I told you about my knee, which walk near Grenoble should I pick?",
    "Remind me what I said about the ridge walk, and plan the day for me.",
    "Plan a Saturday hike for me, with what you know of my boots and my pace.",
)


LOGGED_CALL = re.compile(
    r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) .*MCP call (\w+) ok in ([\d.]+) ms"
)


def memory_calls(log: Path, windows: dict) -> dict:
    """{condition: {tool: [ms]}}: the web app's memory calls made during the replies (its
    log's lines; the warm-up round's replies are not in `windows`)."""
    found = {condition: {} for condition in windows}
    for line in log.read_text(errors="replace").splitlines():
        if not (match := LOGGED_CALL.match(line)):
            continue
        when = datetime.strptime(match[1], "%Y-%m-%d %H:%M:%S,%f")
        for condition, spans in windows.items():
            if any(began <= when <= ended for began, ended in spans):
                found[condition].setdefault(match[2], []).append(float(match[3]))
    return found


def run(args) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="ikario-reply-"))
    app = App(tmp, Path(args.code).resolve() if args.code else ROOT)
    print(f"temp dir (database, index, logs): {tmp}", flush=True)
    try:
        app.start()
        from django.contrib.auth import get_user_model

        from chat.models import Conversation, Message
        from memory.client import services

        users = [get_user_model().objects.create_user(n, password=PASSWORD) for n in USERS]
        alice = users[0]
        # alice's memory before the bench: what her recall and Claude's search find.
        items = [
            {"content": " ".join(exchange_text(TOPICS[k % len(TOPICS)], k, "seed"))}
            for k in range(60)
        ]
        for start in range(0, len(items), 20):
            services.add_thoughts(user=alice, items=items[start : start + 20])
        wait_indexed()
        # Exchanges saved but not yet extracted, for the first backlog's extractions.
        queue_backlog(make_backlog(users, 2, args.exchanges, "before"), 0)
        from django_tasks_db.models import DBTaskResult

        saves = DBTaskResult.objects.filter(task_path__endswith="save_conversation")
        while saves.filter(status__in=["READY", "RUNNING"]).exists():
            time.sleep(0.2)
        settle()
        session = login(app.web_port, "alice")
        samples = {"idle": [], "busy": []}
        windows = {"idle": [], "busy": []}  # each reply's wall-clock span, to read the logs
        cpus = {"idle": {}, "busy": {}}  # CPU seconds each process used during each reply
        still_busy = tool_turns = 0
        started = time.monotonic()
        for i in range(args.replies + 1):  # round 0 warms up (imports, pools, templates)
            order = ("idle", "busy") if i % 2 == 0 else ("busy", "idle")
            for condition in order:
                settle()
                ids = make_backlog(users, args.backlog, args.exchanges, f"{i}{condition}")
                if condition == "busy":
                    queue_backlog(ids, args.exchanges * args.backlog)
                    wait_claimed()
                chat = Conversation.objects.create(user=alice, title="Saturday")
                question = QUESTIONS[i % len(QUESTIONS)]
                began, cpu = datetime.now(), app.cpu_seconds()
                steps = asyncio.run(reply(app.web_port, session, chat.pk, question))
                ended, after = datetime.now(), app.cpu_seconds()
                if i:  # round 0 warms up (imports, pools, templates)
                    windows[condition].append((began, ended))
                    for name in after:
                        used = after[name] - cpu.get(name, 0)
                        cpus[condition].setdefault(name, []).append(used)
                busy_at_end = sum(queued())
                answer = Message.objects.filter(conversation=chat, role="assistant").get()
                if answer.status != "complete" or answer.content != ANSWER:
                    sys.exit(f"reply {i} {condition}: {answer.status} {answer.error!r}")
                if i == 0:
                    continue
                samples[condition].append(steps)
                tool_turns += bool(answer.tool_calls)
                if condition == "busy":
                    still_busy += bool(busy_at_end)
            print(
                f"  round {i}: "
                + "; ".join(
                    f"{c} {samples[c][-1]['first token']:.2f} s / {samples[c][-1]['whole']:.2f} s"
                    for c in samples
                )
                if i
                else "  warm-up done",
                flush=True,
            )
        return {
            "samples": samples,
            "still_busy": still_busy,
            "tool_turns": tool_turns,
            "minutes": (time.monotonic() - started) / 60,
            "tmp": tmp,
            "calls": memory_calls(tmp / "daphne.log", windows),
            "cpus": cpus,
        }
    finally:
        # This process's memory client would report the server's stop as an error.
        logging.getLogger("memory").setLevel(logging.CRITICAL)
        app.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)


def report(args, result) -> None:
    samples = result["samples"]
    n = len(samples["idle"])
    print(
        f"\nrealistic reply (tool round + 150 tokens at {CHAT_PACE:g}/s), {n} replies per "
        f"condition, interleaved; worker backlog {args.backlog} conversations x "
        f"{args.exchanges} exchanges + their extractions"
    )
    parts = (
        ("time to first token", lambda s: s["first token"]),
        ("whole reply", lambda s: s["whole"]),
        ("  message shown", lambda s: s["shown"]),
        ("  recall + first round", lambda s: s["tool"] - s["shown"]),
        ("  tool's search", lambda s: s["tool done"] - s["tool"]),
        ("  second round's 1st token", lambda s: s["first token"] - s["tool done"]),
        ("  streaming", lambda s: s["whole"] - s["first token"]),
    )
    for what, part in parts:
        idle = [part(s) * 1000 for s in samples["idle"]]
        busy = [part(s) * 1000 for s in samples["busy"]]
        ratio, low, high = median_ratio([([b], [a]) for a, b in zip(idle, busy, strict=True)])
        print(
            f"  {what:25}: idle median {summary(idle)['median']:.0f} ms, busy median "
            f"{summary(busy)['median']:.0f} ms; busy/idle {ratio:.3f} "
            f"(95 % interval {low:.3f}-{high:.3f})"
        )
    print(
        f"  busy replies that ended with the worker still busy: {result['still_busy']}/{n}; "
        f"replies with a tool call: {result['tool_turns']}/{2 * n}; "
        f"{result['minutes']:.1f} min"
    )
    for condition, calls in result["calls"].items():
        said = ", ".join(
            f"{tool} {summary(ms)['median']:.0f} ms (n={len(ms)})"
            for tool, ms in sorted(calls.items())
        )
        print(f"  the app's memory calls during {condition} replies, median: {said or 'none'}")
    for condition, used in result["cpus"].items():
        said = ", ".join(
            f"{name} {1000 * summary(seconds)['median']:.0f} ms" for name, seconds in used.items()
        )
        print(f"  CPU each process used during a {condition} reply, median: {said}")
    if args.keep:
        print(f"  logs: {result['tmp']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replies", type=int, default=20, help="replies per condition")
    parser.add_argument("--backlog", type=int, default=4, help="conversations queued to save")
    parser.add_argument("--exchanges", type=int, default=12, help="exchanges per conversation")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir and its logs")
    parser.add_argument("--code", help="the checkout whose app runs (default: this one)")
    args = parser.parse_args()
    report(args, run(args))


if __name__ == "__main__":
    main()
