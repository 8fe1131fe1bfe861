"""What Ikario learns from chats, and whether it is in front of the model when a later chat
needs it, end to end (`make bench-learning`).

On bench/learning/devset.json: ten people (EN and FR), each a user of their own, say things
about themselves in passing, one chat each; some facts change in a later chat; then, in new
chats, they ask what needs a fact without its words. Everything goes through the app: a
throwaway database, the JSON API (POST /api/conversations, then .../messages), the chat's real
turn with the real `anthropic` SDK against the fake Messages API
(tests/fixtures/fake_anthropic.py), the learning task run by the worker's own loop
(memory.worker.database.run_ready_tasks) after each chat, and ikario_rag over streamable HTTP
with a token, as `make run` starts it. Two modes, one user per person in each:

- offline: the worker has no API key, so the rules (memory/learning/offline_facts.py) learn
  and the profile is built from the facts offline; the chats' answers still come from the
  fake model, so what it is sent can be read;
- perfect: a scripted perfect extractor answers the extraction call (`record_facts`) with the
  set's expected facts (`replaces` pointing at the known fact it changes) and the profile call
  (`write_profile`) with the facts it is shown.

The figure is read from what the fake model received for the follow-up (system prompt and
messages, any block): are the fact's words there? Also: the fact stored; after a change, the
new value before the old one, and the old one never alone; non-facts that stored a fact
(junk, target <= 5 %); secrets found in memory (must be 0).

    .venv/bin/python bench/learning/run.py [--mode offline|perfect|both] [--show] [--set FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for _setup
from _setup import ROOT, django_on_temp_db, shared_memory_server  # noqa: E402

sys.path.insert(0, str(ROOT))
from ikario_rag.text import fold  # noqa: E402
from tests.fixtures.fake_anthropic import FakeAnthropic, Reply, TextBlock, ToolUseBlock  # noqa: E402
from tests.fixtures.scripted_extractor import user_words  # noqa: E402

DEVSET = Path(__file__).resolve().parent / "devset.json"
FACT_KINDS = ["self", "preference", "goal", "fact"]
REPLY = "Noted. Here is a short answer."
_KNOWN = re.compile(r"^K(\d+) \[\w+\] (.*)$", re.MULTILINE)
_LISTED = re.compile(r"^- \[(\w+)\] (.*)$", re.MULTILINE)


# -- the words to look for --------------------------------------------------------------------


def where(word: str, text: str) -> int:
    """Where `word` (a|b: either) first occurs in folded `text` at a word's start (a whole
    word when 3 characters or less, or ending in a digit: "is 7" is not "is 17"), or -1."""
    found = []
    for alt in fold(word).split("|"):
        end = r"(?![a-z0-9])" if len(alt) <= 3 or alt[-1].isdigit() else ""
        match = re.search(r"(?<![a-z0-9])" + re.escape(alt) + end, text)
        if match:
            found.append(match.start())
    return min(found) if found else -1


def holds(words: list[str], text: str) -> bool:
    return all(where(word, text) >= 0 for word in words)


def load(path: Path) -> dict:
    """The set, checked: a follow-up never holds the words it needs (nor the old value's)."""
    data = json.loads(path.read_text())
    for person in data["people"]:
        for item in person["items"]:
            if "ask" in item:
                asked = fold(item["ask"])
                said = [w for w in item["needs"] + item.get("stale", []) if where(w, asked) >= 0]
                if said:
                    raise SystemExit(f"{item['id']}: the follow-up repeats {said}")
    if date.today().isoformat() > data["valid_until"]:
        print(f"warning: the set's dates are past ({data['valid_until']}): re-date it")
    return data


# -- the scripted perfect model ---------------------------------------------------------------


class PerfectModel:
    """The fake Messages API's answers: the set's facts for an extraction call, a profile
    of the facts shown for a profile call, a short text for a chat's turn."""

    def __init__(self, data: dict):
        self.facts: dict[str, list[dict]] = {}
        for person in data["people"]:
            for item in person["items"]:
                if "fact" in item:
                    self.facts[item["say"].strip()] = [item["fact"]]
                if "later" in item:
                    self.facts[item["later"].strip()] = [item["new_fact"]]

    def __call__(self, body: dict) -> Reply:
        tool = (body.get("tool_choice") or {}).get("name")
        if tool == "record_facts":
            return self._record(body)
        if tool == "write_profile":
            return self._profile(body)
        return Reply([TextBlock(REPLY)])

    def _record(self, body: dict) -> Reply:
        request = body["messages"][0]["content"]
        known = {n: fold(content) for n, content in _KNOWN.findall(request)}
        facts = []
        for fact in self.facts.get(user_words(body).strip(), []):
            fact = dict(fact)
            old = fold(fact.pop("replaces", "") or "")
            match = next((n for n, content in known.items() if old and old in content), None)
            fact["replaces"] = f"K{match}" if match else None
            facts.append(fact)
        return Reply([ToolUseBlock("record_facts", {"facts": facts})], stop_reason="tool_use")

    def _profile(self, body: dict) -> Reply:
        listed = _LISTED.findall(body["messages"][0]["content"])
        sections = {"who": ("self", "fact"), "preferences": ("preference",), "projects": ("goal",)}
        written = {
            name: " ".join(content for kind, content in listed if kind in kinds)
            for name, kinds in sections.items()
        }
        return Reply([ToolUseBlock("write_profile", written)], stop_reason="tool_use")


# -- one person, end to end ---------------------------------------------------------------------


class App:
    """The app as a script meets it: the JSON API as one logged-in user, the worker's loop
    after each chat (with no key when offline), the fake model's requests."""

    def __init__(self, fake: FakeAnthropic, user, offline: bool, show: bool = False):
        from django.test import Client

        self.fake = fake
        self.show = show
        self.user = user
        self.offline = offline
        self.client = Client()
        self.client.force_login(user)

    def chat(self, text: str) -> tuple[int, list[dict]]:
        """`text` in a new chat: (the answer's id, the requests the model got for it)."""
        created = self.client.post("/api/conversations", {}, content_type="application/json")
        assert created.status_code < 300, created.content
        sent_before = len(self.fake.requests)
        answered = self.client.post(
            f"/api/conversations/{created.json()['id']}/messages",
            {"content": text},
            content_type="application/json",
        )
        assert answered.status_code < 300, answered.content
        sent = list(self.fake.requests[sent_before:])
        self.learn()
        return answered.json()["assistant_message"]["id"], sent

    def learn(self) -> None:
        """What the worker does once the chat pauses (MEMORY_LEARN_DELAY is 0): run what is
        due, until nothing is."""
        from django.conf import settings

        from memory.worker import database

        key = settings.ANTHROPIC_API_KEY
        settings.ANTHROPIC_API_KEY = "" if self.offline else key
        try:
            database.run_ready_tasks()
        finally:
            settings.ANTHROPIC_API_KEY = key

    def memories(self, kinds=None) -> list[str]:
        from memory.client import services

        found = services.get_recent_memories(user=self.user, limit=100, kinds=kinds)
        return [m["content"] for m in found["memories"]]


def sent_text(requests: list[dict]) -> str:
    """Everything the model was sent for a turn (system prompt and messages), folded."""
    parts = []
    for body in requests:
        parts.append(_text(body.get("system")))
        parts.extend(_text(m.get("content")) for m in body.get("messages", []))
    return fold("\n".join(parts))


def _text(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(b.get("text") or b.get("content")) for b in value)
    return ""


def run_person(app: App, person: dict) -> list[dict]:
    """Every item's outcome, for one person: said, changed, asked."""
    from memory.models import LearntExchange

    items = person["items"]
    answers = {}
    for item in items:
        answers[item["id"]], _ = app.chat(item["say"])
    for item in items:
        if item["type"] == "change":
            app.chat(item["later"])
    stored = app.memories(FACT_KINDS)
    if app.show:
        mode = "offline" if app.offline else "perfect"
        print(f"{person['name']} ({mode}): " + " | ".join(stored))
    facts = [fold(m) for m in stored]
    outcomes = []
    for item in items:
        out = {"id": item["id"], "type": item["type"], "lang": person["lang"]}
        out["domain"] = item.get("domain") or item.get("why")
        learnt = LearntExchange.objects.filter(answer_id=answers[item["id"]]).first()
        out["facts_written"] = learnt.facts if learnt else 0
        if "ask" in item:
            out["stored"] = any(holds(item["needs"], f) for f in facts)
            stale = item.get("stale")
            out["stale_stored_alone"] = bool(stale) and any(
                holds(stale, f) and not holds(item["needs"], f) for f in facts
            )
        outcomes.append(out)
    for item, out in zip(items, outcomes, strict=True):
        if "ask" not in item:
            continue
        _, requests = app.chat(item["ask"])
        text = sent_text(requests)
        out["in_front"] = holds(item["needs"], text)
        if item["type"] == "change":
            new_at, old_at = where(item["needs"][-1], text), where(item["stale"][-1], text)
            out["new_first"] = out["in_front"] and (old_at < 0 or new_at < old_at)
            out["stale_alone"] = old_at >= 0 and not out["in_front"]
        out["missed"] = [] if out["in_front"] else item["needs"]
    everything = fold("\n".join(app.memories()))
    squeezed = everything.replace(" ", "")
    for item, out in zip(items, outcomes, strict=True):
        if item["type"] == "secret":
            secret = fold(item["secret"])
            out["secret_stored"] = secret in everything or secret.replace(" ", "") in squeezed
    return outcomes


# -- the figures ----------------------------------------------------------------------------------


def _share(n: int, d: int) -> str:
    return f"{n}/{d} ({100 * n / d:.0f} %)" if d else "-"


def figures(outcomes: list[dict]) -> dict[str, str]:
    asked = [o for o in outcomes if "in_front" in o]
    changes = [o for o in outcomes if o["type"] == "change"]
    non_facts = [o for o in outcomes if o["type"] == "non_fact"]
    secrets = [o for o in outcomes if o["type"] == "secret"]
    return {
        "fact stored": _share(sum(o["stored"] for o in asked), len(asked)),
        "fact in front of the model for the follow-up": _share(
            sum(o["in_front"] for o in asked), len(asked)
        ),
        "after a change: new value first": _share(
            sum(o["new_first"] for o in changes), len(changes)
        ),
        "after a change: stale value alone": _share(
            sum(o["stale_alone"] for o in changes), len(changes)
        ),
        "after a change: stale fact still stored alone": _share(
            sum(o["stale_stored_alone"] for o in changes), len(changes)
        ),
        "junk: non-facts that stored a fact": _share(
            sum(o["facts_written"] > 0 for o in non_facts), len(non_facts)
        ),
        "secrets stored": _share(sum(o["secret_stored"] for o in secrets), len(secrets)),
    }


def report(results: dict[str, list[dict]]) -> None:
    columns = []
    for mode, outcomes in results.items():
        for lang in ("en", "fr", None):
            chosen = [o for o in outcomes if lang is None or o["lang"] == lang]
            columns.append((f"{mode} {lang or 'all'}", figures(chosen)))
    print("\n| | " + " | ".join(name for name, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for row in columns[0][1]:
        print(f"| {row} | " + " | ".join(values[row] for _, values in columns) + " |")


def by_domain(mode: str, outcomes: list[dict]) -> None:
    """Stored and in front of the model, per domain: where the misses are."""
    domains = sorted({o["domain"] for o in outcomes if "in_front" in o})
    cells = []
    for domain in domains:
        chosen = [o for o in outcomes if o["domain"] == domain and "in_front" in o]
        stored, in_front = sum(o["stored"] for o in chosen), sum(o["in_front"] for o in chosen)
        cells.append(f"{domain} {stored}/{in_front}/{len(chosen)}")
    print(f"  {mode}, per domain (stored/in front/items): " + ", ".join(cells))


def show(mode: str, outcomes: list[dict]) -> None:
    by_domain(mode, outcomes)
    for o in outcomes:
        if o.get("in_front") is False:
            print(f"  {mode} not in front: {o['id']} (stored: {o['stored']})")
        if o["type"] == "change" and not o.get("new_first"):
            print(f"  {mode} change not first: {o['id']} (stale alone: {o['stale_alone']})")
        if o["type"] == "non_fact" and o["facts_written"]:
            print(f"  {mode} junk: {o['id']}")
        if o.get("secret_stored"):
            print(f"  {mode} SECRET STORED: {o['id']}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["offline", "perfect", "both"], default="both")
    parser.add_argument("--set", type=Path, default=DEVSET)
    parser.add_argument("--show", action="store_true", help="list each miss")
    parser.add_argument("--people", type=int, help="only the first N people (a quick look)")
    parser.add_argument("--json", type=Path, help="write every item's outcome there")
    args = parser.parse_args()
    data = load(args.set)
    data["people"] = data["people"][: args.people]
    modes = ["offline", "perfect"] if args.mode == "both" else [args.mode]
    index = tempfile.mkdtemp(prefix="ikario-bench-index-")
    with FakeAnthropic() as fake:
        fake.respond_with(PerfectModel(data))
        django_on_temp_db(
            ANTHROPIC_BASE_URL=fake.base_url,
            ANTHROPIC_API_KEY="sk-bench",
            MCP_MEMORY_ENABLED="true",
            MEMORY_LEARN_DELAY="0",
            # The profile's rebuild, a minute after the facts change, is due by the next chat.
            MEMORY_PROFILE_DEBOUNCE="0",
            WEB_LIMITS_ENABLED="false",  # a script's pace, not what is measured
            MCP_CONNECT_TIMEOUT="300",
        )
        from django.conf import settings
        from django.contrib.auth import get_user_model

        from memory.client import services

        # The decision, not a busy machine's deadline: the same recall on every run.
        settings.MEMORY_RETRIEVAL_TIMEOUT = 60.0
        with shared_memory_server(index):
            services.wait_until_ready(300)
            results = {}
            for mode in modes:
                outcomes = []
                for person in data["people"]:
                    user = get_user_model().objects.create_user(f"{mode}-{person['name']}")
                    outcomes += run_person(App(fake, user, mode == "offline", args.show), person)
                    print(f"{mode}: {person['name']} done", file=sys.stderr)
                results[mode] = outcomes
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False))
    if args.show:
        for mode, outcomes in results.items():
            show(mode, outcomes)
    leaked = any(o.get("secret_stored") for outcomes in results.values() for o in outcomes)
    return 1 if leaked else 0


if __name__ == "__main__":
    raise SystemExit(main())
